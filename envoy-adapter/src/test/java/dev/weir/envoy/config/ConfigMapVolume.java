package dev.weir.envoy.config;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * A directory laid out as the kubelet lays out a ConfigMap volume: each version's files in a
 * timestamped {@code ..2026_11_30_...} directory, {@code ..data} a link to the current one, and one
 * top-level link {@code <name> -> ..data/<name>} per top-level name. {@link #publish} replaces the
 * content the way the kubelet's atomic writer does.
 */
public final class ConfigMapVolume {

  private final Path mount;
  private int version;
  private Path current;

  /** Creates the volume at {@code mount}, which must exist. */
  public ConfigMapVolume(Path mount) {
    this.mount = mount;
  }

  /** Returns the mount directory, the path Weir is pointed at. */
  public Path mount() {
    return mount;
  }

  /**
   * Publishes {@code files} (relative path to content; a path may name a subdirectory, as a
   * ConfigMap's {@code items[].path} can): writes a new timestamped directory, points {@code
   * ..data} at it with one atomic rename, adds the top-level links of new names, removes the links
   * of names gone and the previous directory.
   */
  public void publish(Map<String, String> files) throws IOException {
    version++;
    Path next = mount.resolve(String.format("..2026_11_30_10_%02d_00.%d", version, 1000 + version));
    Set<String> topNames = new HashSet<>();
    for (Map.Entry<String, String> file : files.entrySet()) {
      Path target = next.resolve(file.getKey());
      Files.createDirectories(target.getParent());
      Files.writeString(target, file.getValue());
      topNames.add(Path.of(file.getKey()).getName(0).toString());
    }
    Path tmp = mount.resolve("..data_tmp");
    Files.createSymbolicLink(tmp, next.getFileName());
    Files.move(tmp, mount.resolve("..data"), StandardCopyOption.ATOMIC_MOVE);
    for (String name : topNames) {
      Path link = mount.resolve(name);
      if (!Files.isSymbolicLink(link)) {
        Files.createSymbolicLink(link, Path.of("..data").resolve(name));
      }
    }
    try (Stream<Path> entries = Files.list(mount)) {
      for (Path entry : entries.toList()) {
        String name = entry.getFileName().toString();
        if (!name.startsWith(".") && !topNames.contains(name)) {
          Files.delete(entry);
        }
      }
    }
    if (current != null) {
      deleteTree(current);
    }
    current = next;
  }

  private static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(path);
      }
    }
  }
}
