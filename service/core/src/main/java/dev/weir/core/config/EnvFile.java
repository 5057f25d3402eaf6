package dev.weir.core.config;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
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
 * value are trimmed. The file is UTF-8 without NUL bytes; a byte order mark at its start is
 * skipped. A key holding a space is refused (it would name no variable). Values from the file sit
 * under the real environment: a variable set in both takes the environment's value.
 */
public final class EnvFile {

  private EnvFile() {}

  /**
   * Reads {@code file}; throws {@link ConfigException} when it cannot be read or a line is
   * malformed.
   */
  public static Map<String, String> read(Path file) {
    if (Files.isDirectory(file)) {
      throw new ConfigException(
          "--config '" + file + "' cannot be read: it is a directory; give a file");
    }
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (IOException e) {
      throw new ConfigException(
          "--config '" + file + "' cannot be read: " + e.getClass().getSimpleName());
    }
    String text = decode(file, bytes);
    if (ByteOrderMark.length(bytes) > 0) {
      text = text.substring(1);
    }
    return parse(file.toString(), text.lines().toList());
  }

  /**
   * Returns {@code bytes} decoded as UTF-8; a NUL byte (a UTF-16 file's, which would otherwise
   * decode to keys no setting has) or a byte sequence that is not UTF-8 throws {@link
   * ConfigException} naming {@code file}, the line and the byte where it starts.
   */
  private static String decode(Path file, byte[] bytes) {
    for (int i = 0; i < bytes.length; i++) {
      if (bytes[i] == 0) {
        throw new ConfigException(
            "--config '"
                + file
                + "' cannot be read: it holds a NUL byte ("
                + position(bytes, i)
                + "), as a UTF-16 file does; save it as UTF-8");
      }
    }
    CharsetDecoder decoder =
        StandardCharsets.UTF_8
            .newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);
    ByteBuffer in = ByteBuffer.wrap(bytes);
    CharBuffer out = CharBuffer.allocate(bytes.length);
    CoderResult result = decoder.decode(in, out, true);
    if (!result.isError()) {
      result = decoder.flush(out);
    }
    if (result.isError()) {
      throw new ConfigException(
          "--config '"
              + file
              + "' cannot be read: it is not valid UTF-8 ("
              + position(bytes, in.position())
              + "); save it as UTF-8");
    }
    return out.flip().toString();
  }

  /** Returns where byte {@code at} of {@code bytes} is: {@code line 2, byte 31 of the file}. */
  private static String position(byte[] bytes, int at) {
    int line = 1;
    for (int i = 0; i < at; i++) {
      if (bytes[i] == '\n') {
        line++;
      }
    }
    return "line " + line + ", byte " + (at + 1) + " of the file";
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
