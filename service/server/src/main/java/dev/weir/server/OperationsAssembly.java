package dev.weir.server;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running node's operations, assembled: the timers that refresh gRPC health and reload TLS, and
 * the first steps of stopping (failing readiness, then waiting out
 * {@code WEIR_GRACEFUL_TERMINATION_DELAY}). The last part {@link WeirNode} starts, so its stop
 * steps run first.
 */
final class OperationsAssembly {

  private static final Logger LOG = LoggerFactory.getLogger(WeirNode.class);

  private OperationsAssembly() {}

  /** Starts the timers and records the stop steps in {@code components}. */
  static void start(
      WeirNode.Builder b,
      TransportAssembly transport,
      ClusterAssembly cluster,
      FrontDoorAssembly doors,
      Lifecycle components)
      throws Exception {
    ScheduledExecutorService timers =
        components.start(
            "health and reload timers",
            () -> Timers.daemonScheduler("weir-health"),
            ExecutorService::shutdownNow);
    GrpcHealth grpcHealth = transport.grpcHealth();
    grpcHealth.follow(cluster.health());
    grpcHealth.refresh();
    Timers.every(timers, Duration.ofMillis(GrpcHealth.REFRESH_MILLIS), grpcHealth::refreshQuietly);
    NodeTls tls = transport.tls();
    if (tls.any()) {
      Timers.every(timers, tls.reloadInterval(), tls::reload);
    }
    components.onStop(
        "graceful termination delay",
        () -> waitOut(b.ops.gracefulTerminationDelay(), b.sleeper));
    components.onStop(
        "readiness",
        () -> {
          cluster.draining().start();
          grpcHealth.stopServing();
          doors.doors().drainStreams();
        });
  }

  /** Keeps serving, not ready, for {@code delay}, which load balancers take to deregister. */
  private static void waitOut(Duration delay, Sleeper sleeper) throws InterruptedException {
    if (!delay.isZero()) {
      LOG.info("not ready; serving for {} before stopping", delay);
      sleeper.sleep(delay);
    }
  }
}
