package dev.weir.server.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.core.importer.Location;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import dev.weir.core.model.Status;
import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;

/**
 * The dependency rules of the code base, checked on the compiled classes of every module the server
 * puts together (tests and test jars left out): pure logic without I/O, threads or clocks, and
 * dependencies that point one way, proto ← core ← backends (discovery, TLS, metrics, HTTP) ←
 * adapters ← server. Every module has packages of its own ({@code dev.weir.core..} is the core
 * module, {@code dev.weir.discovery.etcd} the etcd backend, {@code dev.weir.http} the HTTP front
 * door, ...), so the rules name packages, and one rule keeps it so.
 */
@AnalyzeClasses(
    packages = "dev.weir",
    importOptions = {
      ImportOption.DoNotIncludeTests.class,
      ArchitectureTest.DoNotIncludeTestJars.class
    })
class ArchitectureTest {

  /**
   * The parts of each module form no cycle. A slice is a package two levels below {@code dev.weir}
   * with its subpackages ({@code core.cluster}, {@code core.limiter}, {@code envoy.config}, ...): a
   * package and its own subpackages may know each other (a settings record names the settings of
   * each mechanism below it), the parts of a module may not.
   */
  @ArchTest
  static final ArchRule noCyclesBetweenParts =
      slices().matching("dev.weir.(*).(*)..").should().beFreeOfCycles();

  /**
   * The cluster's packages form no cycle: {@code dev.weir.core.cluster} and each of its
   * subpackages ({@code ring}, {@code peer}, {@code peer.auth}, {@code batch}, {@code global},
   * {@code handoff}, {@code snapshot}, ...) is a slice of its own, so a subpackage reaching back
   * into the package above it fails, which {@link #noCyclesBetweenParts} cannot see.
   */
  @ArchTest
  static final ArchRule noCyclesAmongClusterPackages =
      slices()
          .assignedFrom(new EachPackageUnder("dev.weir.core.cluster"))
          .should()
          .beFreeOfCycles();

  /**
   * The descriptor config ({@code dev.weir.envoy.config}) knows nothing of the adapter that loads
   * it: the adapter's settings and wiring in {@code dev.weir.envoy} name the config's options, so a
   * config class reaching back to them would make a cycle, which {@link #noCyclesBetweenParts}
   * cannot see (the adapter's own package is no part).
   */
  @ArchTest
  static final ArchRule envoyConfigKnowsNotTheAdapter =
      noClasses()
          .that()
          .resideInAPackage("dev.weir.envoy.config..")
          .should()
          .dependOnClassesThat()
          .resideInAPackage("dev.weir.envoy");

  /**
   * The top-level packages ({@code core}, {@code http}, {@code tls}, {@code discovery}, {@code
   * metrics}, {@code envoy}, {@code gubernator}, {@code server}, ...) form no cycle.
   */
  @ArchTest
  static final ArchRule noCyclesBetweenTopLevelPackages =
      slices().matching("dev.weir.(*)..").should().beFreeOfCycles();

  /**
   * A package lives in exactly one module (no split package, as the module system requires), so a
   * class's package names the module it comes from.
   */
  @ArchTest
  static final ArchRule everyPackageInOneModule = classes().should(new StayInOneModulePerPackage());

  /**
   * The core module (the embeddable member) runs on gRPC, protobuf, Caffeine and SLF4J alone: it
   * knows no discovery backend, TLS, metrics or HTTP module, no Micrometer, BouncyCastle, etcd or
   * Kubernetes client and no unshaded Netty (so no Netty HTTP codec), no adapter and no server.
   */
  @ArchTest
  static final ArchRule coreImportsNoBackendAdapterOrServer =
      noClasses()
          .that()
          .resideInAPackage("dev.weir.core..")
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage(
              "dev.weir.discovery..",
              "dev.weir.tls..",
              "dev.weir.metrics..",
              "dev.weir.http..",
              "dev.weir.envoy..",
              "dev.weir.gubernator..",
              "dev.weir.server..",
              "io.etcd..",
              "io.fabric8..",
              "io.micrometer..",
              "org.bouncycastle..",
              "io.netty..");

  /**
   * The engine, the ring and descriptor matching are functions of their inputs: no I/O, no threads,
   * executors or concurrent structures, no clock reading, no logging. Value types such as {@code
   * Instant} and {@code StandardCharsets} are fine.
   */
  @ArchTest
  static final ArchRule pureLogicTouchesNoIoThreadsOrClock =
      noClasses()
          .that()
          .resideInAnyPackage(
              "dev.weir.core.engine..",
              "dev.weir.core.cluster.ring..",
              "dev.weir.ring..",
              "dev.weir.envoy.match..")
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage(
              "java.io..",
              "java.nio.file..",
              "java.nio.channels..",
              "java.net..",
              "java.util.concurrent..",
              "io.grpc..",
              "io.netty..",
              "org.slf4j..",
              "dev.weir.core.time..")
          .orShould()
          .dependOnClassesThat()
          .areAssignableTo(Thread.class)
          .orShould()
          .dependOnClassesThat()
          .areAssignableTo(java.time.Clock.class)
          .orShould()
          .callMethod(System.class, "currentTimeMillis")
          .orShould()
          .callMethod(System.class, "nanoTime")
          .orShould()
          .callMethod(java.time.Instant.class, "now")
          .orShould()
          .callMethod(java.time.ZonedDateTime.class, "now")
          .orShould()
          .callMethod(java.time.LocalDateTime.class, "now");

  /**
   * The model's {@link Status} crosses the wire by name ({@code PeerProtos.toProto} and {@code
   * statusOf}), never by its declaration order: nothing calls its {@code ordinal()}.
   */
  @ArchTest
  static final ArchRule statusNeverMappedByOrdinal =
      noClasses().should().callMethod(Status.class, "ordinal");

  /** The core's request path knows no discovery backend. */
  @ArchTest
  static final ArchRule clusterImportsNoDiscoveryBackend =
      noClasses()
          .that()
          .resideInAnyPackage(
              "dev.weir.core.cluster..",
              "dev.weir.core.limiter..",
              "dev.weir.core.store..",
              "dev.weir.core.engine..")
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage(
              "dev.weir.discovery.etcd..",
              "dev.weir.discovery.kubernetes..",
              "dev.weir.core.discovery.dns..",
              "io.etcd..",
              "io.fabric8..");

  /** The Envoy adapter does not import the Gubernator adapter. */
  @ArchTest
  static final ArchRule envoyAdapterImportsNotTheOtherAdapter =
      noClasses()
          .that()
          .resideInAPackage("dev.weir.envoy..")
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage("dev.weir.gubernator..", "dev.weir.server..");

  /** The Gubernator adapter does not import the Envoy adapter. */
  @ArchTest
  static final ArchRule gubernatorAdapterImportsNotTheOtherAdapter =
      noClasses()
          .that()
          .resideInAPackage("dev.weir.gubernator..")
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage("dev.weir.envoy..", "dev.weir.server..");

  /** Puts each package at or under {@code root} in a slice of its own, and ignores the rest. */
  static final class EachPackageUnder implements SliceAssignment {
    private final String root;

    EachPackageUnder(String root) {
      this.root = root;
    }

    @Override
    public SliceIdentifier getIdentifierOf(JavaClass type) {
      String name = type.getPackageName();
      return name.equals(root) || name.startsWith(root + ".")
          ? SliceIdentifier.of(name)
          : SliceIdentifier.ignore();
    }

    @Override
    public String getDescription() {
      return "each package under " + root;
    }
  }

  /**
   * The condition that no two classes of one package come from different class path roots (a
   * module's {@code target/classes} or its jar).
   */
  static final class StayInOneModulePerPackage extends ArchCondition<JavaClass> {
    private final Map<String, Map<String, JavaClass>> rootsByPackage = new TreeMap<>();

    StayInOneModulePerPackage() {
      super("stay in one module per package");
    }

    @Override
    public void init(Collection<JavaClass> allClasses) {
      rootsByPackage.clear();
    }

    @Override
    public void check(JavaClass type, ConditionEvents events) {
      type.getSource()
          .ifPresent(
              source ->
                  rootsByPackage
                      .computeIfAbsent(type.getPackageName(), p -> new TreeMap<>())
                      .putIfAbsent(rootOf(type, source.getUri().toString()), type));
    }

    @Override
    public void finish(ConditionEvents events) {
      rootsByPackage.forEach(
          (pkg, roots) -> {
            if (roots.size() > 1) {
              events.add(
                  SimpleConditionEvent.violated(
                      pkg, "package " + pkg + " is in several modules: " + roots.keySet()));
            }
          });
    }

    /** Returns the class path root a class file was loaded from. */
    static String rootOf(JavaClass type, String uri) {
      String relative = type.getName().replace('.', '/') + ".class";
      return uri.endsWith(relative) ? uri.substring(0, uri.length() - relative.length()) : uri;
    }
  }

  /** Leaves out the test jars of other modules (the core's test kit), as tests are left out. */
  static final class DoNotIncludeTestJars implements ImportOption {
    @Override
    public boolean includes(Location location) {
      return !location.contains("-tests.jar");
    }
  }
}
