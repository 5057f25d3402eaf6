package dev.weir.envoy.config;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Finds and reads the descriptor files at a path the way envoyproxy/ratelimit's runtime loader
 * does: the path itself when it is a file, otherwise every regular file below the directory,
 * recursively and whatever its extension, each directory's entries in name order.
 *
 * <p>Entries whose names start with a dot are skipped at every depth: that skips the {@code ..data}
 * link and the {@code ..<timestamp>} directory of a Kubernetes ConfigMap mount, whose visible names
 * are links through {@code ..data}. Links are followed, to files and to directories; a file reached
 * twice (a link beside its target, two links to one file) is read once, under the first name in
 * walk order, and a directory reached twice is walked once. Sockets, devices and pipes are
 * skipped. A link that leads to nothing, an entry that cannot be examined, or one that vanishes
 * while the walk runs fails the read: loading without what it held would drop its domains' limits,
 * so a reload keeps the last good config instead (a ConfigMap update passes through such states
 * for a moment, and the next check loads the finished one). For the same reason a directory whose
 * {@code ..data} holds a name the directory has no entry for fails the read: the kubelet has
 * swapped {@code ..data} to a new version and not yet linked that name.
 *
 * <p>A key prefix keeps, below a directory, only the files whose runtime key starts with it, as
 * the reference does with {@code RUNTIME_WATCH_ROOT}: the key is the file's path relative to the
 * directory with each separator read as {@code .} ({@code config.yaml}, {@code config/a.yaml} as
 * {@code config.a.yaml}); other entries are skipped unexamined, and only directories whose files'
 * keys may start with the prefix are walked.
 */
public final class ConfigFiles {

  /**
   * What a walk found: the files to read, in order, each as the walk reached it ({@code files}) and
   * as its links resolved then ({@code targets}), and the entries it skipped.
   */
  public record Listing(List<Path> files, List<Path> targets, List<String> skipped) {

    /** Creates a listing, copying the lists. */
    public Listing {
      files = List.copyOf(files);
      targets = List.copyOf(targets);
      skipped = List.copyOf(skipped);
      if (files.size() != targets.size()) {
        throw new IllegalArgumentException("one target per file");
      }
    }
  }

  /**
   * Reads the bytes of {@code target}, the file listed as {@code file} (which errors name), refusing
   * it when it holds more than {@code maxBytes}.
   */
  @FunctionalInterface
  interface FileBytes {
    byte[] read(Path file, Path target, int maxBytes) throws DescriptorConfigException;
  }

  /** The link a Kubernetes ConfigMap volume keeps to its current version's directory. */
  static final String DATA = "..data";

  /** How many times a read is tried when the files change under it. */
  static final int READ_ATTEMPTS = 3;

  private ConfigFiles() {}

  /**
   * Returns the files at {@code path} and the skipped entries (named relative to {@code path}); a
   * missing or unreadable path is a {@link DescriptorConfigException}.
   */
  public static Listing list(Path path) throws DescriptorConfigException {
    return list(path, "");
  }

  /**
   * Returns the files at {@code path} whose key starts with {@code keyPrefix} and the skipped
   * entries (named relative to {@code path}); a missing or unreadable path is a {@link
   * DescriptorConfigException}.
   */
  public static Listing list(Path path, String keyPrefix) throws DescriptorConfigException {
    if (!Files.exists(path)) {
      throw new DescriptorConfigException(path + ": config path does not exist");
    }
    if (!Files.isDirectory(path)) {
      return new Listing(List.of(path), List.of(Walk.realPath(path)), List.of());
    }
    Walk walk = new Walk(path, keyPrefix);
    walk.directory(path);
    return new Listing(walk.files, walk.targets, walk.skipped);
  }

  /**
   * Reads every descriptor file at {@code path}, refusing a file over {@code limits.maxFileBytes()}
   * or files over {@code limits.maxTotalBytes()} together before parsing anything; an unreadable
   * path or file is a {@link DescriptorConfigException}.
   *
   * <p>The files are read as one version: each through the target its links resolved to when the
   * walk listed it (a Kubernetes ConfigMap's {@code ..<timestamp>} directory, which an update
   * replaces rather than changes), and the read starts again, up to {@value #READ_ATTEMPTS} times,
   * when a link resolves elsewhere once the files were read (an update swapped {@code ..data}
   * meanwhile), so old and new files are never loaded together.
   */
  public static List<ConfigFile> read(Path path, ConfigLimits limits)
      throws DescriptorConfigException {
    return read(path, limits, "");
  }

  /**
   * Reads the descriptor files at {@code path} as {@link #read(Path, ConfigLimits)} does, below a
   * directory only those whose key starts with {@code keyPrefix}.
   */
  public static List<ConfigFile> read(Path path, ConfigLimits limits, String keyPrefix)
      throws DescriptorConfigException {
    return read(path, limits, keyPrefix, ConfigFiles::readFile);
  }

  static List<ConfigFile> read(Path path, ConfigLimits limits, FileBytes reader)
      throws DescriptorConfigException {
    return read(path, limits, "", reader);
  }

  static List<ConfigFile> read(Path path, ConfigLimits limits, String keyPrefix, FileBytes reader)
      throws DescriptorConfigException {
    for (int attempt = 1; ; attempt++) {
      Listing listing = list(path, keyPrefix);
      List<ConfigFile> out;
      try {
        out = readListed(listing, limits, reader);
      } catch (DescriptorConfigException e) {
        if (attempt < READ_ATTEMPTS && moved(listing)) {
          continue;
        }
        throw e;
      }
      if (!moved(listing)) {
        return out;
      }
      if (attempt == READ_ATTEMPTS) {
        throw new DescriptorConfigException(
            path
                + ": the config files changed while they were read, "
                + READ_ATTEMPTS
                + " times in a row; none was loaded");
      }
    }
  }

  private static List<ConfigFile> readListed(
      Listing listing, ConfigLimits limits, FileBytes reader) throws DescriptorConfigException {
    List<ConfigFile> out = new ArrayList<>();
    long total = 0;
    for (int i = 0; i < listing.files().size(); i++) {
      Path file = listing.files().get(i);
      byte[] bytes = reader.read(file, listing.targets().get(i), limits.maxFileBytes());
      total += bytes.length;
      if (total > limits.maxTotalBytes()) {
        throw new DescriptorConfigException(
            file
                + ": the config files up to this one hold "
                + total
                + " bytes, over the limit of "
                + limits.maxTotalBytes()
                + " bytes for all files together (WEIR_ENVOY_CONFIG_MAX_TOTAL_SIZE); none was"
                + " parsed");
      }
      out.add(new ConfigFile(file.toString(), utf8(file, bytes)));
    }
    return out;
  }

  // Whether a listed file's links now resolve to another target, or it is gone.
  private static boolean moved(Listing listing) {
    for (int i = 0; i < listing.files().size(); i++) {
      try {
        if (!listing.files().get(i).toRealPath().equals(listing.targets().get(i))) {
          return true;
        }
      } catch (IOException e) {
        return true;
      }
    }
    return false;
  }

  /**
   * Reads {@code target}, listed as {@code file}, refusing it unread when its size is over {@code
   * maxBytes}.
   */
  private static byte[] readFile(Path file, Path target, int maxBytes)
      throws DescriptorConfigException {
    byte[] bytes;
    try {
      long size = Files.size(target);
      if (size > maxBytes) {
        throw tooLarge(file, size + " bytes", maxBytes);
      }
      try (InputStream in = Files.newInputStream(target)) {
        bytes = in.readNBytes(maxBytes + 1);
      }
    } catch (IOException e) {
      throw new DescriptorConfigException(file + ": error reading config file: " + e.getMessage());
    }
    if (bytes.length > maxBytes) {
      throw tooLarge(file, "more than " + maxBytes + " bytes", maxBytes);
    }
    return bytes;
  }

  private static String utf8(Path file, byte[] bytes) throws DescriptorConfigException {
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      throw new DescriptorConfigException(file + ": error reading config file: not valid UTF-8");
    }
  }

  private static DescriptorConfigException tooLarge(Path file, String size, int maxBytes) {
    return new DescriptorConfigException(
        file
            + ": config file is "
            + size
            + ", over the limit of "
            + maxBytes
            + " bytes per file (WEIR_ENVOY_CONFIG_MAX_FILE_SIZE); it was not parsed");
  }

  /** One walk of a directory tree, remembering what it has reached. */
  private static final class Walk {
    private final Path root;
    private final String keyPrefix;
    private final List<Path> files = new ArrayList<>();
    private final List<Path> targets = new ArrayList<>();
    private final List<String> skipped = new ArrayList<>();
    private final Set<Path> seenFiles = new HashSet<>();
    private final Set<Path> seenDirectories = new HashSet<>();

    Walk(Path root, String keyPrefix) {
      this.root = root;
      this.keyPrefix = keyPrefix;
    }

    void directory(Path dir) throws DescriptorConfigException {
      Path real = realPath(dir);
      if (!seenDirectories.add(real)) {
        return;
      }
      List<Path> entries = new ArrayList<>();
      try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir)) {
        stream.forEach(entries::add);
      } catch (IOException e) {
        throw new DescriptorConfigException(
            dir + ": error reading config directory: " + e.getMessage());
      }
      entries.sort((a, b) -> a.getFileName().toString().compareTo(b.getFileName().toString()));
      for (Path entry : entries) {
        if (entry.getFileName().toString().startsWith(".")) {
          skipped.add(root.relativize(entry).toString());
          continue;
        }
        String key = root.relativize(entry).toString().replace(File.separatorChar, '.');
        boolean selected = key.startsWith(keyPrefix);
        if (!selected && !keyPrefix.startsWith(key + ".")) {
          skipped.add(root.relativize(entry).toString());
          continue;
        }
        BasicFileAttributes attributes = attributes(entry);
        if (attributes.isDirectory()) {
          directory(entry);
        } else if (attributes.isRegularFile() && selected) {
          Path realFile = realPath(entry);
          if (seenFiles.add(realFile)) {
            files.add(entry);
            targets.add(realFile);
          }
        } else {
          skipped.add(root.relativize(entry).toString());
        }
      }
      requireDataLinked(dir, entries);
    }

    /**
     * Fails when {@code dir}, listed as {@code entries}, holds a {@code ..data} directory with a
     * name none of {@code entries} has: a ConfigMap update between the swap of {@code ..data} and
     * the link of a new name, which read now would load the new version without that file.
     */
    private static void requireDataLinked(Path dir, List<Path> entries)
        throws DescriptorConfigException {
      Path data = dir.resolve(DATA);
      if (!Files.isDirectory(data)) {
        return;
      }
      Set<String> listed = new HashSet<>();
      entries.forEach(entry -> listed.add(entry.getFileName().toString()));
      List<String> unlinked = new ArrayList<>();
      try (DirectoryStream<Path> stream = Files.newDirectoryStream(data)) {
        for (Path entry : stream) {
          String name = entry.getFileName().toString();
          if (!listed.contains(name)) {
            unlinked.add(name);
          }
        }
      } catch (IOException e) {
        throw new DescriptorConfigException(
            data + ": error reading config directory: " + e.getMessage());
      }
      if (unlinked.isEmpty()) {
        return;
      }
      unlinked.sort(null);
      throw new DescriptorConfigException(
          dir
              + ": a ConfigMap update is not finished: "
              + DATA
              + (Files.isSymbolicLink(data) ? " (" + linkTarget(data) + ")" : "")
              + " holds "
              + String.join(", ", unlinked)
              + ", with no link in the directory yet; the files are read once every name of "
              + DATA
              + " has one");
    }

    private static String linkTarget(Path link) {
      try {
        return "-> " + Files.readSymbolicLink(link);
      } catch (IOException e) {
        return "a link";
      }
    }

    /** Returns what {@code entry} leads to, links followed; one that leads nowhere is an error. */
    private static BasicFileAttributes attributes(Path entry) throws DescriptorConfigException {
      try {
        return Files.readAttributes(entry, BasicFileAttributes.class);
      } catch (NoSuchFileException e) {
        String what = "vanished while the config was read";
        if (Files.isSymbolicLink(entry)) {
          what = "is a link to nothing";
          try {
            what = "is a link to " + Files.readSymbolicLink(entry) + ", which does not exist";
          } catch (IOException unreadable) {
            // Keep the shorter description.
          }
        }
        throw new DescriptorConfigException(entry + ": " + what);
      } catch (IOException e) {
        throw new DescriptorConfigException(
            entry + ": error reading config path: " + e.getMessage());
      }
    }

    /** Returns the real path of {@code entry}; one that vanished since listed is an error. */
    static Path realPath(Path entry) throws DescriptorConfigException {
      try {
        return entry.toRealPath();
      } catch (NoSuchFileException e) {
        throw new DescriptorConfigException(entry + ": vanished while the config was read");
      } catch (IOException e) {
        throw new DescriptorConfigException(
            entry + ": error reading config path: " + e.getMessage());
      }
    }
  }
}
