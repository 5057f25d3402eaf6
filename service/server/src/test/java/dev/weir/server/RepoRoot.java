package dev.weir.server;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

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

  /** Folders that hold no sources of the repository's own, or are written to while tests run. */
  private static final Set<String> SKIPPED = Set.of("target", ".git", "node_modules");

  /** Returns the Java main sources ({@code src/main/java}) of every module of the repository. */
  static List<Path> mainJavaSources() throws IOException {
    return mainJavaSources(find());
  }

  /**
   * Returns the Java files under a {@code src/main/java} folder below {@code root}, without
   * entering {@code target}, {@code .git} or {@code node_modules} folders: build output there is
   * written and deleted while tests of other modules run, and a walk through it fails on a file
   * that vanished.
   */
  static List<Path> mainJavaSources(Path root) throws IOException {
    List<Path> sources = new ArrayList<>();
    Files.walkFileTree(
        root,
        new SimpleFileVisitor<>() {
          @Override
          public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
            Path name = dir.getFileName();
            return name != null && SKIPPED.contains(name.toString())
                ? FileVisitResult.SKIP_SUBTREE
                : FileVisitResult.CONTINUE;
          }

          @Override
          public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
            String path = file.toString().replace('\\', '/');
            if (path.endsWith(".java") && path.contains("/src/main/java/")) {
              sources.add(file);
            }
            return FileVisitResult.CONTINUE;
          }
        });
    return sources;
  }
}
