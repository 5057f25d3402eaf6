package dev.weir.e2e.image;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The patterns of a {@code .dockerignore} file, matched as Docker matches them: a path is excluded
 * when the last pattern matching it or one of its parent directories is not a {@code !} exception.
 *
 * <p>Follows Docker's rules ({@code moby/patternmatcher}): {@code #} lines are comments, patterns
 * are cleaned and relative to the context root, {@code *} and {@code ?} stay within one path
 * segment, {@code **} spans any number of directories (none included), {@code [...]} is a character
 * class.
 */
final class DockerIgnore {

  /** One line of the file: the cleaned pattern, whether it re-includes, and its regex. */
  private record Rule(String pattern, boolean exception, Pattern regex) {}

  private final List<Rule> rules;

  private DockerIgnore(List<Rule> rules) {
    this.rules = rules;
  }

  /** Reads {@code file}; a missing file excludes nothing. */
  static DockerIgnore read(Path file) {
    if (!Files.exists(file)) {
      return parse(List.of());
    }
    try {
      return parse(Files.readAllLines(file));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Parses the lines of a {@code .dockerignore} file. */
  static DockerIgnore parse(List<String> lines) {
    List<Rule> rules = new ArrayList<>();
    for (String line : lines) {
      if (line.startsWith("#")) {
        continue;
      }
      String pattern = line.strip();
      boolean exception = pattern.startsWith("!");
      if (exception) {
        pattern = pattern.substring(1).strip();
      }
      if (pattern.isEmpty()) {
        continue;
      }
      pattern = clean(pattern);
      rules.add(new Rule(pattern, exception, compile(pattern)));
    }
    return new DockerIgnore(rules);
  }

  /**
   * Returns the pattern that excludes {@code relativePath} (slash-separated, relative to the
   * context root), or empty when the path is in the build context.
   */
  Optional<String> excludingPattern(String relativePath) {
    String path = clean(relativePath);
    Rule decisive = null;
    for (Rule rule : rules) {
      if (matchesItOrAParent(rule.regex(), path)) {
        decisive = rule;
      }
    }
    return decisive == null || decisive.exception()
        ? Optional.empty()
        : Optional.of(decisive.pattern());
  }

  /** Returns whether {@code relativePath} is kept out of the build context. */
  boolean excludes(String relativePath) {
    return excludingPattern(relativePath).isPresent();
  }

  private static boolean matchesItOrAParent(Pattern regex, String path) {
    if (regex.matcher(path).matches()) {
      return true;
    }
    for (int slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) {
      if (regex.matcher(path.substring(0, slash)).matches()) {
        return true;
      }
    }
    return false;
  }

  private static String clean(String pattern) {
    String cleaned = Path.of(pattern).normalize().toString().replace('\\', '/');
    return cleaned.length() > 1 && cleaned.startsWith("/") ? cleaned.substring(1) : cleaned;
  }

  private static Pattern compile(String pattern) {
    StringBuilder regex = new StringBuilder();
    for (int i = 0; i < pattern.length(); i++) {
      char c = pattern.charAt(i);
      if (c == '*' && i + 1 < pattern.length() && pattern.charAt(i + 1) == '*') {
        i++;
        if (i + 1 < pattern.length() && pattern.charAt(i + 1) == '/') {
          i++;
        }
        regex.append(i + 1 == pattern.length() ? ".*" : "(.*/)?");
      } else if (c == '*') {
        regex.append("[^/]*");
      } else if (c == '?') {
        regex.append("[^/]");
      } else if (c == '[' && pattern.indexOf(']', i) > i) {
        int end = pattern.indexOf(']', i);
        regex.append(pattern, i, end + 1);
        i = end;
      } else if (c == '\\' && i + 1 < pattern.length()) {
        regex.append(Pattern.quote(String.valueOf(pattern.charAt(++i))));
      } else {
        regex.append(Pattern.quote(String.valueOf(c)));
      }
    }
    return Pattern.compile(regex.toString());
  }
}
