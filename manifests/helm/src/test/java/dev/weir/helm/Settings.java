package dev.weir.helm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The environment variables Weir documents as its settings. */
final class Settings {
  private static final Pattern README_ROW = Pattern.compile("(?m)^\\|\\s*`(WEIR_[A-Z0-9_]+)`");
  private static final Pattern RATELIMIT_ROW = Pattern.compile("(?m)^\\|([^|]*)\\|");
  private static final Pattern NAME = Pattern.compile("`([A-Z][A-Z0-9_]+)`");

  private Settings() {}

  /**
   * Returns the variables of README.md's configuration tables and, for the ratelimit subcommand,
   * the reference's variables that docs/migrating-from-ratelimit.md's table lists.
   */
  static Set<String> documented() {
    try {
      Set<String> names = new TreeSet<>();
      Matcher weir = README_ROW.matcher(Files.readString(Chart.REPO.resolve("README.md")));
      while (weir.find()) {
        names.add(weir.group(1));
      }
      String migrating = Files.readString(Chart.REPO.resolve("docs/migrating-from-ratelimit.md"));
      Matcher row = RATELIMIT_ROW.matcher(migrating);
      while (row.find()) {
        Matcher name = NAME.matcher(row.group(1));
        while (name.find()) {
          names.add(name.group(1));
        }
      }
      return names;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
