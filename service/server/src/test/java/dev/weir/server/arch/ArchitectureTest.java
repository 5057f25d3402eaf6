package dev.weir.server.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;

/**
 * The dependency rules of the code base, checked on the compiled classes of every module the server
 * puts together (tests left out): pure logic without I/O, threads or clocks, and dependencies that
 * point one way, proto ← core ← adapters ← server.
 */
@AnalyzeClasses(packages = "dev.weir", importOptions = ImportOption.DoNotIncludeTests.class)
class ArchitectureTest {

  /**
   * The engine, the ring and descriptor matching are functions of their inputs: no I/O, no
   * threads, executors or concurrent structures, no clock reading, no logging. Value types such as
   * {@code Instant} and {@code StandardCharsets} are fine.
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
}
