package dev.weir.helm;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/** The chart in {@code manifests/helm/weir}, rendered by Helm's library into fabric8's model. */
public final class Chart {
  /** The chart's directory: the build passes it, else it is found above the working directory. */
  public static final Path DIR = locate();

  /** The repository's root. */
  public static final Path REPO = DIR.getParent().getParent().getParent();

  /** The Kubernetes version rendered for (Helm's library assumes 1.20 otherwise). */
  static final String KUBE_VERSION = "1.31.0";

  private static final Pattern SOURCE = Pattern.compile("(?m)^# Source: (\\S+)");

  /** A YAML reader that refuses a mapping repeating a key, of which fabric8 keeps the last. */
  private static final ObjectMapper STRICT_YAML =
      YAMLMapper.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

  private Chart() {}

  /** A rendered document: the template it came from and the typed object fabric8 made of it. */
  public record Document(String template, HasMetadata object) {}

  /** Renders the chart as release {@code weir} in namespace {@code weir} with {@code values}. */
  public static Rendered render(String values) {
    return render("weir", "weir", values);
  }

  /**
   * Renders the chart as {@code release} in {@code namespace} with the YAML {@code values}, hooks
   * included: Helm's library returns only the release's manifest, without hooks, so a copy of the
   * chart is rendered whose {@code helm.sh/hook} annotations are renamed {@value #HOOK}.
   */
  public static Rendered render(String release, String namespace, String values) {
    return render(release, namespace, values, UnaryOperator.identity());
  }

  /**
   * Renders as {@link #render(String, String, String)} does a copy of the chart whose every file's
   * text went through {@code edit} first: a test's stand-in for what template mode cannot do, such
   * as a {@code lookup} that finds an object.
   */
  public static Rendered render(
      String release, String namespace, String values, UnaryOperator<String> edit) {
    try {
      Path copy = copy(text -> withoutCluster(edit.apply(text)).replace("helm.sh/hook", HOOK));
      try {
        return template(copy, release, namespace, values);
      } finally {
        delete(copy);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Rendered template(Path chart, String release, String namespace, String values)
      throws IOException {
    String yaml =
        withValuesFile(
            values,
            file ->
                new Helm(chart)
                    .template()
                    .withKubeVersion(KUBE_VERSION)
                    .withName(release)
                    .withNamespace(namespace)
                    .withValuesFile(file)
                    .call());
    return new Rendered(parse(yaml));
  }

  /** A call of Helm's library given the path of a values file. */
  @FunctionalInterface
  private interface WithValues<T> {
    T call(Path valuesFile) throws IOException;
  }

  /** Returns what {@code helm} returns given {@code values} in a temporary file, deleted after. */
  private static <T> T withValuesFile(String values, WithValues<T> helm) throws IOException {
    Path file = Files.createTempFile("weir-values", ".yaml");
    try {
      Files.writeString(file, values);
      return helm.call(file);
    } finally {
      Files.deleteIfExists(file);
    }
  }

  /**
   * The notes {@code helm install} prints (templates/NOTES.txt) for release {@code weir} in
   * namespace {@code weir} with the YAML {@code values}: a client-only dry run, as {@code helm
   * template} renders no notes.
   */
  public static String notes(String values) {
    try {
      Path copy = copyWithoutCluster();
      try {
        String output =
            withValuesFile(
                values,
                file ->
                    new Helm(copy)
                        .install()
                        .withKubeVersion(KUBE_VERSION)
                        .withName("weir")
                        .withNamespace("weir")
                        .withValuesFile(file)
                        .clientOnly()
                        .dryRun()
                        .call()
                        .getOutput());
        int start = output.indexOf("NOTES:");
        if (start < 0) {
          throw new AssertionError("no NOTES in helm install's output:\n" + output);
        }
        return output.substring(start + "NOTES:".length());
      } finally {
        delete(copy);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Renders as {@code helm upgrade --reuse-values} does a release that an older chart installed:
   * Helm then renders the templates with the older chart's defaults, so {@code values} go over a
   * copy of the chart's values.yaml without the keys {@code added} names (dotted paths, each of
   * which must exist), which the older chart did not have.
   */
  public static Rendered renderReusingValues(String values, String... added) {
    try {
      Path copy = copy(text -> withoutCluster(text).replace("helm.sh/hook", HOOK));
      try {
        Map<String, Object> defaults = yamlMap(Files.readString(DIR.resolve("values.yaml")));
        for (String key : added) {
          remove(defaults, key);
        }
        Files.writeString(copy.resolve("values.yaml"), Serialization.asYaml(defaults));
        return template(copy, "weir", "weir", values);
      } finally {
        delete(copy);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @SuppressWarnings("unchecked")
  private static void remove(Map<String, Object> values, String dotted) {
    String[] path = dotted.split("\\.");
    Map<String, Object> parent = values;
    for (int i = 0; i < path.length - 1; i++) {
      if (!(parent.get(path[i]) instanceof Map<?, ?> child)) {
        throw new IllegalArgumentException("values.yaml has no " + dotted);
      }
      parent = (Map<String, Object>) child;
    }
    if (parent.remove(path[path.length - 1]) == null) {
      throw new IllegalArgumentException("values.yaml has no " + dotted);
    }
  }

  /**
   * Lints, as {@code helm lint --strict}, a copy of the chart whose values.yaml is its defaults
   * merged with {@code values} as Helm merges them (maps key by key, anything else replaced):
   * Helm's library lints a chart with its own values only.
   */
  public static LintResult lint(String values) {
    try {
      Path copy = copy(text -> text);
      try {
        Map<String, Object> merged =
            merge(
                yamlMap(Files.readString(DIR.resolve("values.yaml"))),
                values.isBlank() ? Map.of() : yamlMap(values));
        Files.writeString(copy.resolve("values.yaml"), Serialization.asYaml(merged));
        return new Helm(copy).lint().strict().call();
      } finally {
        delete(copy);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> yamlMap(String yaml) {
    return Serialization.unmarshal(yaml, Map.class);
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> merge(Map<String, Object> base, Map<String, Object> over) {
    Map<String, Object> merged = new LinkedHashMap<>(base);
    over.forEach(
        (key, value) -> {
          if (value instanceof Map<?, ?> child && merged.get(key) instanceof Map<?, ?> parent) {
            merged.put(key, merge((Map<String, Object>) parent, (Map<String, Object>) child));
          } else {
            merged.put(key, value);
          }
        });
    return merged;
  }

  /**
   * A {@code lookup} call of the chart's: {@code lookup "v1" "Secret" .Release.Namespace $name}.
   * helm-java's template runs Helm's install with dry-run {@code none}, which, unlike {@code helm
   * template}, sends lookups to the cluster, and these tests have none ({@code
   * KUBECONFIG=/dev/null}).
   */
  private static final Pattern LOOKUP =
      Pattern.compile("\\blookup(\\s+(\"[^\"]*\"|[.$][\\w.]*)){4}");

  /** The chart's {@code text} with every lookup finding nothing, as in {@code helm template}. */
  static String withoutCluster(String text) {
    return LOOKUP.matcher(text).replaceAll("dict");
  }

  /**
   * A copy of the chart for Helm's library to render without a cluster ({@link
   * #withoutCluster(String)}); {@link #delete(Path)} it after.
   */
  static Path copyWithoutCluster() throws IOException {
    return copy(Chart::withoutCluster);
  }

  /** The annotation a rendered hook carries instead of {@code helm.sh/hook}. */
  public static final String HOOK = "weir.test/hook";

  private static Path copy(UnaryOperator<String> edit) throws IOException {
    Path copy = Files.createTempDirectory("weir-chart");
    try (Stream<Path> files = Files.walk(DIR)) {
      for (Path f : files.toList()) {
        Path target = copy.resolve(DIR.relativize(f).toString());
        if (Files.isDirectory(f)) {
          Files.createDirectories(target);
        } else {
          Files.writeString(target, edit.apply(Files.readString(f)));
        }
      }
    }
    return copy;
  }

  static void delete(Path dir) throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(f);
      }
    }
  }

  /**
   * Splits Helm's output into documents, each unmarshalled into fabric8's typed model; fails on a
   * document that repeats a key in a mapping, which strict YAML parsers refuse.
   */
  static List<Document> parse(String yaml) {
    List<Document> docs = new ArrayList<>();
    for (String doc : yaml.split("(?m)^---\\s*$")) {
      if (doc.lines().anyMatch(l -> !l.isBlank() && !l.startsWith("#"))) {
        Matcher source = SOURCE.matcher(doc);
        String template = source.find() ? source.group(1) : "?";
        try {
          STRICT_YAML.readTree(doc);
        } catch (JsonProcessingException e) {
          throw new AssertionError(template + " is not valid YAML: " + e.getOriginalMessage(), e);
        }
        docs.add(new Document(template, Serialization.unmarshal(doc, HasMetadata.class)));
      }
    }
    return docs;
  }

  private static Path locate() {
    String configured = System.getProperty("weir.chart.dir");
    if (configured != null) {
      return Path.of(configured).toAbsolutePath().normalize();
    }
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isDirectory(dir.resolve("manifests/helm/weir"))) {
      dir = dir.getParent();
    }
    if (dir == null) {
      throw new IllegalStateException(
          "no manifests/helm/weir above " + Path.of("").toAbsolutePath());
    }
    return dir.resolve("manifests/helm/weir");
  }
}
