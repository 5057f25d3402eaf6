package dev.weir.server;

import java.nio.file.Files;
import java.nio.file.Path;

/** The root of the Weir repository: the nearest folder holding {@code mvnw}, for tests of files. */
final class RepoRoot {

  private RepoRoot() {}

  /** Returns the nearest folder at or above the working directory that holds {@code mvnw}. */
  static Path find() {
    return from(Path.of("").toAbsolutePath());
  }

  /**
   * Returns the nearest folder at or above {@code start} that holds {@code mvnw}.
   *
   * @throws IllegalStateException if no folder from {@code start} up to the file system root does
   */
  static Path from(Path start) {
    for (Path dir = start; dir != null; dir = dir.getParent()) {
      if (Files.isRegularFile(dir.resolve("mvnw"))) {
        return dir;
      }
    }
    throw new IllegalStateException(
        "no folder at or above " + start + " holds mvnw; run the tests from inside the repository");
  }
}
