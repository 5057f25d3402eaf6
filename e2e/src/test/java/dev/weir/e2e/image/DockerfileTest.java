package dev.weir.e2e.image;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.e2e.envoy.EnvoyYaml;
import dev.weir.e2e.envoy.RepoFiles;
import dev.weir.e2e.image.DockerfileInstructions.Instruction;
import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The repository's {@code Dockerfile} builds {@code weir.jar} from what the build context holds:
 * every {@code COPY} source exists and {@code .dockerignore} keeps all of it in; the build stage
 * copies every module's POM before it resolves dependencies and the sources of every module {@code
 * weir.jar} is built from after; the image listens on every interface on the ports it exposes,
 * which the compose file and the Deployment use with the image name the docs build.
 */
class DockerfileTest {
  private static final Path ROOT = RepoFiles.root();
  private static final DockerfileInstructions DOCKERFILE =
      DockerfileInstructions.read(ROOT.resolve("Dockerfile"));
  private static final DockerIgnore IGNORE = DockerIgnore.read(ROOT.resolve(".dockerignore"));
  private static final String SERVER_MODULE = "service/server";

  @Test
  void copiesFromTheContext_ofSourcesThatExist_noFileOfThemIgnored() throws IOException {
    List<String> problems = new ArrayList<>();
    List<String> checked = new ArrayList<>();
    for (Instruction copy : DOCKERFILE.all()) {
      if (!copy.copiesFromContext()) {
        continue;
      }
      assertThat(copy.text()).as(copy.keyword() + " in shell form").doesNotStartWith("[");
      for (String source : copy.sources()) {
        Path path = ROOT.resolve(source).normalize();
        if (source.contains("*") || source.contains("?")) {
          problems.add(source + ": a wildcard, which this test does not expand");
        } else if (!Files.exists(path)) {
          problems.add(source + ": not in the repository");
        } else {
          for (String file : contextFilesOf(path)) {
            IGNORE
                .excludingPattern(file)
                .ifPresent(
                    pattern ->
                        problems.add(
                            file + " (COPY " + source + "): excluded by .dockerignore " + pattern));
          }
          checked.add(stripSlash(source));
        }
      }
    }

    assertThat(problems).isEmpty();
    assertThat(checked).contains("mvnw", ".mvn", "pom.xml", SERVER_MODULE + "/src");
  }

  @Test
  void dockerignore_keepsGitBuildOutputsAndIdeFilesOut() {
    assertThat(
            List.of(
                ".git/HEAD",
                "target/x",
                "service/core/target/classes/dev/weir/core/Weir.class",
                "e2e/target/failsafe-reports/x.txt",
                ".idea/workspace.xml",
                "service/core/weir-core.iml",
                ".vscode/settings.json"))
        .allMatch(IGNORE::excludes);
  }

  @Test
  void buildStage_copiesEveryPomBeforeResolvingDependencies_andTheSourcesAfter() throws Exception {
    List<Instruction> build = DOCKERFILE.ofStage(0);
    int firstRun = indexOfFirst(build, "RUN");
    List<String> before = copiedSources(build.subList(0, firstRun));
    List<String> after = copiedSources(build.subList(firstRun, build.size()));
    List<String> poms = new ArrayList<>(List.of("pom.xml"));
    modules().forEach(module -> poms.add(module + "/pom.xml"));

    assertThat(before).contains("mvnw", ".mvn").containsAll(poms);
    assertThat(before).noneMatch(source -> source.contains("src"));
    assertThat(build.get(firstRun).text()).contains("dependency:go-offline");
    assertThat(after)
        .as("sources copied after the dependency layer")
        .containsExactlyInAnyOrderElementsOf(
            modulesWeirJarIsBuiltFrom().stream().map(module -> module + "/src").toList());
    assertThat(build.get(build.size() - 1).text())
        .as("the build stage's last step")
        .contains("-pl " + SERVER_MODULE + " -am", "package");
  }

  @Test
  void image_runsWeirJarAsNonRoot_onEveryInterface_onThePortsItExposes() {
    int last = DOCKERFILE.finalStage();
    List<Instruction> image = DOCKERFILE.ofStage(last);

    assertThat(DOCKERFILE.environment(last))
        .containsEntry("WEIR_GRPC_ADDRESS", "0.0.0.0:1051")
        .containsEntry("WEIR_HTTP_ADDRESS", "0.0.0.0:1050");
    assertThat(exposedPorts())
        .as("serve's HTTP, gRPC and peer ports; the ratelimit subcommand's HTTP, gRPC, debug ports")
        .containsExactlyInAnyOrder(1050, 1051, 1052, 8080, 8081, 6070);
    assertThat(image)
        .filteredOn(i -> i.keyword().equals("RUN"))
        .extracting(Instruction::text)
        .anySatisfy(run -> assertThat(run).contains("weir.jar ratelimit", "/bin/ratelimit"));
    assertThat(image)
        .filteredOn(i -> i.keyword().equals("USER"))
        .singleElement()
        .extracting(Instruction::text)
        .isEqualTo("10001:10001");
    assertThat(image)
        .filteredOn(i -> i.keyword().equals("COPY"))
        .singleElement()
        .satisfies(
            copy -> {
              assertThat(copy.flags()).containsEntry("from", "build");
              assertThat(copy.arguments())
                  .containsExactly(
                      "/build/" + SERVER_MODULE + "/target/weir.jar", "/opt/weir/weir.jar");
            });
  }

  @Test
  void composeDeploymentAndDocs_useTheImageTheDockerfileBuilds_onItsPorts() throws IOException {
    Map<?, ?> container = deploymentContainer();
    String image = (String) container.get("image");
    Set<Integer> containerPorts = new LinkedHashSet<>();
    for (Object port : (List<?>) container.get("ports")) {
      containerPorts.add((Integer) ((Map<?, ?>) port).get("containerPort"));
    }
    Path compose = ROOT.resolve("envoy-config/docker-compose.yaml");
    Map<?, ?> services = (Map<?, ?>) ((Map<?, ?>) EnvoyYaml.load(compose)).get("services");
    List<String> built = new ArrayList<>();
    for (Map.Entry<?, ?> service : services.entrySet()) {
      Map<?, ?> definition = (Map<?, ?>) service.getValue();
      if (definition.get("build") instanceof Map<?, ?> build) {
        assertThat(compose.getParent().resolve((String) build.get("context")).normalize())
            .isEqualTo(ROOT);
        assertThat(build.get("dockerfile")).isEqualTo("Dockerfile");
        assertThat(definition.get("image")).as(service.getKey() + " image").isEqualTo(image);
        built.add((String) service.getKey());
      }
    }

    assertThat(containerPorts).containsExactlyInAnyOrder(1050, 1051, 1052);
    assertThat(exposedPorts()).containsAll(containerPorts);
    assertThat(built).containsExactlyInAnyOrder("weir-1", "weir-2", "weir-3");
    String build = "docker build -t " + image + " .";
    for (String doc : List.of("README.md", "manifests/README.md")) {
      assertThat(Files.readString(ROOT.resolve(doc)).contains(build))
          .as(doc + " shows `" + build + "`")
          .isTrue();
    }
  }

  private static Map<?, ?> deploymentContainer() {
    Map<?, ?> deployment =
        (Map<?, ?>) EnvoyYaml.load(ROOT.resolve("manifests/base/deployment.yaml"));
    Map<?, ?> podSpec =
        (Map<?, ?>) ((Map<?, ?>) ((Map<?, ?>) deployment.get("spec")).get("template")).get("spec");
    List<?> containers = (List<?>) podSpec.get("containers");
    assertThat(containers).hasSize(1);
    return (Map<?, ?>) containers.get(0);
  }

  private static Set<Integer> exposedPorts() {
    Set<Integer> ports = new LinkedHashSet<>();
    for (Instruction instruction : DOCKERFILE.ofStage(DOCKERFILE.finalStage())) {
      if (instruction.keyword().equals("EXPOSE")) {
        instruction.arguments().forEach(port -> ports.add(Integer.parseInt(port)));
      }
    }
    return ports;
  }

  private static int indexOfFirst(List<Instruction> instructions, String keyword) {
    for (int i = 0; i < instructions.size(); i++) {
      if (instructions.get(i).keyword().equals(keyword)) {
        return i;
      }
    }
    throw new AssertionError("no " + keyword + " in " + instructions);
  }

  private static List<String> copiedSources(List<Instruction> instructions) {
    return instructions.stream()
        .filter(Instruction::copiesFromContext)
        .flatMap(copy -> copy.sources().stream())
        .map(DockerfileTest::stripSlash)
        .toList();
  }

  private static String stripSlash(String source) {
    return source.endsWith("/") ? source.substring(0, source.length() - 1) : source;
  }

  /**
   * Returns the files a fresh clone has at {@code path} (the file, or those under the directory),
   * relative to the repository root: Maven's {@code target/} directories are build outputs.
   */
  private static List<String> contextFilesOf(Path path) throws IOException {
    List<String> files = new ArrayList<>();
    Files.walkFileTree(
        path,
        new SimpleFileVisitor<>() {
          @Override
          public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
            if (dir.getFileName().toString().equals("target")) {
              return FileVisitResult.SKIP_SUBTREE;
            }
            return FileVisitResult.CONTINUE;
          }

          @Override
          public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
            files.add(relative(file));
            return FileVisitResult.CONTINUE;
          }
        });
    return files;
  }

  private static String relative(Path path) {
    return ROOT.relativize(path).toString().replace('\\', '/');
  }

  /** Returns the modules the parent POM lists. */
  private static List<String> modules() throws Exception {
    List<String> modules = new ArrayList<>();
    NodeList list = pom(ROOT.resolve("pom.xml")).getElementsByTagName("module");
    for (int i = 0; i < list.getLength(); i++) {
      modules.add(list.item(i).getTextContent().strip());
    }
    return modules;
  }

  /**
   * Returns the server module and every module it depends on, directly or not, in any scope: what
   * {@code -pl service/server -am} builds.
   */
  private static Set<String> modulesWeirJarIsBuiltFrom() throws Exception {
    Map<String, String> moduleOfArtifact = new HashMap<>();
    Map<String, List<String>> dependenciesOfModule = new HashMap<>();
    for (String module : modules()) {
      Document pom = pom(ROOT.resolve(module).resolve("pom.xml"));
      moduleOfArtifact.put(childText(pom.getDocumentElement(), "artifactId"), module);
      List<String> dependencies = new ArrayList<>();
      NodeList list = pom.getElementsByTagName("dependency");
      for (int i = 0; i < list.getLength(); i++) {
        Element dependency = (Element) list.item(i);
        if (childText(dependency, "groupId").equals("dev.weir")) {
          dependencies.add(childText(dependency, "artifactId"));
        }
      }
      dependenciesOfModule.put(module, dependencies);
    }
    Set<String> built = new LinkedHashSet<>();
    Deque<String> pending = new ArrayDeque<>(List.of(SERVER_MODULE));
    while (!pending.isEmpty()) {
      String module = pending.pop();
      if (built.add(module)) {
        dependenciesOfModule.get(module).forEach(a -> pending.push(moduleOfArtifact.get(a)));
      }
    }
    return built;
  }

  private static Document pom(Path file) throws Exception {
    DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
    factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
    return factory.newDocumentBuilder().parse(file.toFile());
  }

  private static String childText(Element parent, String name) {
    for (Node child = parent.getFirstChild(); child != null; child = child.getNextSibling()) {
      if (child instanceof Element element && element.getTagName().equals(name)) {
        return element.getTextContent().strip();
      }
    }
    return "";
  }
}
