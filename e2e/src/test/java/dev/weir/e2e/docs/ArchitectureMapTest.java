package dev.weir.e2e.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.e2e.envoy.RepoFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * ARCHITECTURE.md names only what exists: every class it names in backticks ({@code Name} or
 * {@code Name.method}) is a Java source file of the repository (with that method), or an RPC or
 * message of its protos, and every path it names is there.
 */
class ArchitectureMapTest {

  /** A class name, optionally with a method: {@code ClusterRateLimitService.decide}. */
  private static final Pattern CLASS = Pattern.compile("([A-Z][a-z][A-Za-z0-9]*)(?:\\.(\\w+))?");

  private static final Pattern CODE = Pattern.compile("`([^`]+)`");

  /** Names of Envoy's API (a dependency's protos, not this repository's). */
  private static final Set<String> ENVOY_API = Set.of("ShouldRateLimit", "RateLimitRequest");

  private final Path root = RepoFiles.root();

  @Test
  void everyNamedClassMethodAndPathExists() throws IOException {
    Map<String, Path> sources = javaSources();
    String protos = protoText();
    List<String> missing = new ArrayList<>();
    for (String code : codeSpans(Files.readString(root.resolve("ARCHITECTURE.md")))) {
      String problem = problem(code, sources, protos);
      if (problem != null) {
        missing.add(problem);
      }
    }
    assertThat(missing).as("names in ARCHITECTURE.md that the repository does not have").isEmpty();
  }

  @Test
  void aClassThatDoesNotExist_isReported() throws IOException {
    assertThat(problem("NoSuchRouter", javaSources(), protoText())).contains("NoSuchRouter");
    assertThat(problem("LocalLimiter.decideEverything", javaSources(), protoText()))
        .contains("decideEverything");
    assertThat(problem("service/nowhere", javaSources(), protoText())).contains("service/nowhere");
  }

  /** Returns what is wrong with the code span {@code code}, or null when it names what exists. */
  private String problem(String code, Map<String, Path> sources, String protos) {
    if (code.contains("/") && !code.contains(" ") && !code.startsWith("/")) {
      String path = code.replaceAll("/$", "");
      return Files.exists(root.resolve(path)) ? null : "path " + code;
    }
    Matcher m = CLASS.matcher(code);
    if (!m.matches()) {
      return null;
    }
    String name = m.group(1);
    Path source = sources.get(name);
    if (source == null) {
      boolean inProtos =
          protos.contains("rpc " + name + "(") || protos.contains("message " + name + " ");
      return inProtos || ENVOY_API.contains(name) ? null : "class " + name;
    }
    if (m.group(2) == null) {
      return null;
    }
    try {
      String text = Files.readString(source);
      return Pattern.compile("\\b" + Pattern.quote(m.group(2)) + "\\(").matcher(text).find()
          ? null
          : "method " + code;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Set<String> codeSpans(String markdown) {
    Set<String> out = new TreeSet<>();
    Matcher m = CODE.matcher(markdown);
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  /** The repository's Java sources (main and test, no build output), by simple class name. */
  private Map<String, Path> javaSources() throws IOException {
    return RepoFiles.sourceFilesUnder(root).stream()
        .filter(p -> p.toString().endsWith(".java"))
        .collect(
            Collectors.toMap(
                p -> p.getFileName().toString().replace(".java", ""),
                Function.identity(),
                (a, b) -> a));
  }

  private String protoText() throws IOException {
    try (Stream<Path> files = Files.walk(root.resolve("proto"))) {
      StringBuilder out = new StringBuilder();
      for (Path p :
          files.filter(f -> f.toString().endsWith(".proto")).collect(Collectors.toList())) {
        out.append(Files.readString(p)).append('\n');
      }
      return out.toString();
    }
  }
}
