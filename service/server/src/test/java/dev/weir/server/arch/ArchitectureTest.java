package dev.weir.server.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.core.importer.Location;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;

/**
 * The dependency rules of the code base, checked on the compiled classes of every module the server
 * puts together (tests and test jars left out): pure logic without I/O, threads or clocks, and
 * dependencies that point one way, proto ← core ← backends (discovery, TLS, metrics, HTTP) ←
 * adapters ← server.
 *
 * <p>The backend modules keep the core's package names ({@code dev.weir.core.discovery.etcd},
 * {@code dev.weir.core.http}, ...), so the rules about the core module find its classes by where
 * they were loaded from, not by package.
 */
@AnalyzeClasses(
    packages = "dev.weir",
    importOptions = {
      ImportOption.DoNotIncludeTests.class,
      ArchitectureTest.DoNotIncludeTestJars.class
    })
class ArchitectureTest {

  private static final DescribedPredicate<JavaClass> IN_CORE_MODULE = inModule("core");

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
   * The core module (the embeddable member) runs on gRPC, protobuf, Caffeine and SLF4J alone: it
   * knows no discovery backend, TLS, metrics or HTTP module, no Micrometer, BouncyCastle, etcd or
   * Kubernetes client and no unshaded Netty (so no Netty HTTP codec), no adapter and no server.
   */
  @ArchTest
  static final ArchRule coreModuleImportsNoBackendAdapterOrServer =
      noClasses()
          .that(IN_CORE_MODULE)
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage(
              "dev.weir.envoy..",
              "dev.weir.gubernator..",
              "dev.weir.server..",
              "io.etcd..",
              "io.fabric8..",
              "io.micrometer..",
              "org.bouncycastle..",
              "io.netty..")
          .orShould()
          .dependOnClassesThat(
              inModule("discovery-etcd")
                  .or(inModule("discovery-kubernetes"))
                  .or(inModule("tls"))
                  .or(inModule("metrics-micrometer"))
                  .or(inModule("http")));

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
              "dev.weir.core.engine..", "dev.weir.core.cluster.ring..", "dev.weir.envoy.match..")
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

  /** The core knows neither front door, nor the server. */
  @ArchTest
  static final ArchRule coreImportsNoAdapterOrServer =
      noClasses()
          .that()
          .resideInAPackage("dev.weir.core..")
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage("dev.weir.envoy..", "dev.weir.gubernator..", "dev.weir.server..");

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
              "dev.weir.core.discovery.etcd..",
              "dev.weir.core.discovery.k8s..",
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

  /**
   * Selects the classes of the module in {@code service/<name>}: loaded from its build output in
   * the reactor, or from its jar {@code weir-<name>-<version>.jar}.
   */
  private static DescribedPredicate<JavaClass> inModule(String name) {
    String directory = "/service/" + name + "/target/classes/";
    String jar = "/weir-" + name + "-";
    return DescribedPredicate.describe(
        "in module service/" + name,
        type ->
            type.getSource()
                .map(source -> source.getUri().toString())
                .map(
                    uri ->
                        uri.contains(directory) || uri.contains(jar) && !uri.contains("-tests.jar"))
                .orElse(false));
  }

  /** Leaves out the test jars of other modules (the core's test kit), as tests are left out. */
  static final class DoNotIncludeTestJars implements ImportOption {
    @Override
    public boolean includes(Location location) {
      return !location.contains("-tests.jar");
    }
  }
}
