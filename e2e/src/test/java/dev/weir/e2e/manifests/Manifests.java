package dev.weir.e2e.manifests;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/** Reading {@code manifests/}: its files, their documents as fabric8 typed objects, unknown fields. */
final class Manifests {
  static final Path ROOT = locate();

  private Manifests() {}

  /** A document of a manifest file: where it came from and the typed object fabric8 made of it. */
  record Document(Path file, String yaml, HasMetadata object) {}

  /** The Helm chart's module: templates, not manifests; its own tests check it. */
  static final Path HELM = ROOT.resolve("helm");

  /** Returns every YAML file under {@code manifests/} except kustomization files and the chart. */
  static List<Path> resourceFiles() {
    try (Stream<Path> files = Files.walk(ROOT)) {
      return files
          .filter(p -> p.toString().endsWith(".yaml"))
          .filter(p -> !p.startsWith(HELM))
          .filter(p -> !p.getFileName().toString().equals("kustomization.yaml"))
          .sorted()
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Returns every kustomization file under {@code manifests/}. */
  static List<Path> kustomizations() {
    try (Stream<Path> files = Files.walk(ROOT)) {
      return files
          .filter(p -> !p.startsWith(HELM))
          .filter(p -> p.getFileName().toString().equals("kustomization.yaml"))
          .sorted()
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Returns the documents of {@code file}, each unmarshalled into fabric8's typed model. */
  static List<Document> documents(Path file) throws IOException {
    List<Document> docs = new ArrayList<>();
    for (String yaml : Files.readString(file).split("(?m)^---\\s*$")) {
      if (yaml.lines().anyMatch(l -> !l.isBlank() && !l.startsWith("#"))) {
        docs.add(new Document(file, yaml, Serialization.unmarshal(yaml, HasMetadata.class)));
      }
    }
    return docs;
  }

  /** Returns the documents of every file in the kustomization directory {@code dir}, following bases. */
  static List<Document> build(Path dir) throws IOException {
    List<Document> docs = new ArrayList<>();
    for (Object entry : resources(dir.resolve("kustomization.yaml"))) {
      Path target = dir.resolve(entry.toString()).normalize();
      if (Files.isDirectory(target)) {
        docs.addAll(build(target));
      } else {
        docs.addAll(documents(target));
      }
    }
    return docs;
  }

  /** Returns the {@code resources} list of a kustomization file. */
  static List<?> resources(Path kustomization) throws IOException {
    Map<?, ?> k = Serialization.unmarshal(Files.readString(kustomization), Map.class);
    Object resources = k.get("resources");
    return resources instanceof List<?> list ? list : List.of();
  }

  private static Path locate() {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isDirectory(dir.resolve("manifests"))) {
      dir = dir.getParent();
    }
    if (dir == null) {
      throw new IllegalStateException("no manifests/ directory above " + Path.of("").toAbsolutePath());
    }
    return dir.resolve("manifests");
  }
}
