package dev.weir.e2e.envoy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

/** Locates files of the repository checkout the tests run in. */
public final class RepoFiles {
  private RepoFiles() {}

  /**
   * Returns the repository root: the nearest directory at or above the working directory holding
   * mvnw and e2e/.
   */
  public static Path root() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null) {
      if (Files.isRegularFile(dir.resolve("mvnw")) && Files.isDirectory(dir.resolve("e2e"))) {
        return dir;
      }
      dir = dir.getParent();
    }
    throw new IllegalStateException(
        "no repository root (a directory with mvnw and e2e/) at or above "
            + Path.of("").toAbsolutePath());
  }

  /** Folders that hold none of the repository's own files, or are written to while tests run. */
  private static final Set<String> NOT_SOURCES = Set.of("target", ".git", "node_modules");

  /**
   * Returns the regular files under {@code dir}, without entering {@code target}, {@code .git} or
   * {@code node_modules} folders: build output there is written and deleted while tests run (this
   * module's reports), and a walk through it fails on a file that vanished.
   */
  public static List<Path> sourceFilesUnder(Path dir) throws IOException {
    List<Path> files = new ArrayList<>();
    Files.walkFileTree(
        dir,
        new SimpleFileVisitor<>() {
          @Override
          public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes attrs) {
            Path name = d.getFileName();
            return name != null && NOT_SOURCES.contains(name.toString())
                ? FileVisitResult.SKIP_SUBTREE
                : FileVisitResult.CONTINUE;
          }

          @Override
          public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
            if (attrs.isRegularFile()) {
              files.add(file);
            }
            return FileVisitResult.CONTINUE;
          }
        });
    return files;
  }

  /** Returns the shipped Envoy front-proxy bootstrap. */
  public static Path frontProxyBootstrap() {
    return root().resolve("envoy-config/front-proxy/envoy.yaml");
  }

  /**
   * Returns the shipped Weir descriptor config matching the front proxy: the folder {@code
   * WEIR_ENVOY_CONFIG} names in the compose file, holding only descriptor files.
   */
  public static Path frontProxyDescriptors() {
    return root().resolve("envoy-config/front-proxy/ratelimit");
  }

  /** Returns the shipped Envoy bootstrap that uses Weir as its rate-limit quota service (RLQS). */
  public static Path rlqsBootstrap() {
    return root().resolve("envoy-config/rlqs/envoy.yaml");
  }

  /**
   * Returns the shipped Weir descriptor config matching the RLQS bootstrap's buckets: a folder of
   * descriptor files only, mounted under {@code WEIR_ENVOY_CONFIG} in the compose file.
   */
  public static Path rlqsDescriptors() {
    return root().resolve("envoy-config/rlqs/ratelimit");
  }

  /**
   * Returns every {@code .yaml}/{@code .yml} file under {@code relativeDir}, sorted, but Helm
   * chart templates and build output; none when the folder is absent.
   */
  public static List<Path> yamlFilesUnder(String relativeDir) {
    Path dir = root().resolve(relativeDir);
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.walk(dir)) {
      return files
          .filter(Files::isRegularFile)
          .filter(file -> file.toString().endsWith(".yaml") || file.toString().endsWith(".yml"))
          .filter(file -> !inHelmTemplates(file) && !file.toString().contains("/target/"))
          .sorted()
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Returns whether {@code file} is a Helm chart's template (under {@code templates/} beside a
   * {@code Chart.yaml}): Go templates, not YAML, which the chart's own tests render and check.
   */
  private static boolean inHelmTemplates(Path file) {
    for (Path dir = file.getParent(); dir != null && dir.getParent() != null; dir = dir.getParent()) {
      if (dir.getFileName().toString().equals("templates")
          && Files.isRegularFile(dir.getParent().resolve("Chart.yaml"))) {
        return true;
      }
    }
    return false;
  }
}
