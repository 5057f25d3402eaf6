package dev.weir.envoy.config;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Reads the descriptor files at a path: the file itself, or every {@code *.yaml} / {@code *.yml}
 * entry of a directory in name order.
 *
 * <p>Entries whose names start with a dot are skipped; this skips the {@code ..data} link and the
 * {@code ..<timestamp>} directory of a Kubernetes ConfigMap mount, whose visible names are links
 * through {@code ..data} and are read through it. Subdirectories are not read.
 */
public final class ConfigFiles {

  private ConfigFiles() {}

  /**
   * Reads every descriptor file at {@code path}; an unreadable path is a {@link ConfigException}.
   */
  public static List<ConfigFile> read(Path path) throws ConfigException {
    if (!Files.exists(path)) {
      throw new ConfigException(path + ": config path does not exist");
    }
    List<Path> files = new ArrayList<>();
    if (Files.isDirectory(path)) {
      try (DirectoryStream<Path> entries = Files.newDirectoryStream(path)) {
        for (Path entry : entries) {
          String name = entry.getFileName().toString();
          String lower = name.toLowerCase(Locale.ROOT);
          if (!name.startsWith(".")
              && (lower.endsWith(".yaml") || lower.endsWith(".yml"))
              && Files.isRegularFile(entry)) {
            files.add(entry);
          }
        }
      } catch (IOException e) {
        throw new ConfigException(path + ": error reading config directory: " + e.getMessage());
      }
      files.sort(null);
    } else {
      files.add(path);
    }
    List<ConfigFile> out = new ArrayList<>();
    for (Path file : files) {
      try {
        out.add(new ConfigFile(file.toString(), Files.readString(file, StandardCharsets.UTF_8)));
      } catch (IOException e) {
        throw new ConfigException(file + ": error reading config file: " + e.getMessage());
      }
    }
    return out;
  }
}
