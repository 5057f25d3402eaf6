package dev.weir.core.config;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Gubernator's {@code --config FILE}: lines of {@code KEY=VALUE}, optionally {@code export
 * KEY=VALUE} as in a shell file; blank lines and lines starting with {@code #} are skipped; key and
 * value are trimmed. A key holding a space is refused (it would name no variable). Values from the
 * file sit under the real environment: a variable set in both takes the environment's value.
 */
public final class EnvFile {

  private EnvFile() {}

  /**
   * Reads {@code file}; throws {@link ConfigException} when it cannot be read or a line is
   * malformed.
   */
  public static Map<String, String> read(Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new ConfigException(
          "--config '" + file + "' cannot be read: " + e.getClass().getSimpleName());
    }
    return parse(file.toString(), lines);
  }

  /** Parses {@code lines} read from {@code source}, which names the file in error messages. */
  public static Map<String, String> parse(String source, List<String> lines) {
    Map<String, String> values = new LinkedHashMap<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).trim();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      int equals = line.indexOf('=');
      String key = equals <= 0 ? "" : line.substring(0, equals).trim();
      if (key.startsWith("export") && key.length() > 6 && Character.isWhitespace(key.charAt(6))) {
        key = key.substring(6).trim();
      }
      if (key.isEmpty() || key.chars().anyMatch(Character::isWhitespace)) {
        throw new ConfigException(
            "--config '"
                + source
                + "' line "
                + (i + 1)
                + "='"
                + line
                + "' is not valid: expected KEY=VALUE (or export KEY=VALUE), a KEY without spaces");
      }
      values.put(key, line.substring(equals + 1).trim());
    }
    return values;
  }

  /**
   * Returns {@code fileValues} overlaid with {@code environment}, whose values win unless blank (a
   * blank variable counts as unset, so the file's value applies).
   */
  public static Map<String, String> mergeUnder(
      Map<String, String> fileValues, Map<String, String> environment) {
    Map<String, String> merged = new HashMap<>(fileValues);
    environment.forEach(
        (name, value) -> {
          if (value == null || value.isBlank()) {
            merged.putIfAbsent(name, value);
          } else {
            merged.put(name, value);
          }
        });
    return merged;
  }
}
