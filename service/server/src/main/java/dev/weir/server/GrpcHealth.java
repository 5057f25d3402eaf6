package dev.weir.server;

import dev.weir.core.health.HealthChecker;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.BindableService;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.protobuf.services.HealthStatusManager;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's {@code grpc.health.v1} service: it reports the node, {@code pb.gubernator.V1} and the
 * extra service names SERVING exactly while the node is ready, and NOT_SERVING until {@link
 * #refresh()} first runs (gRPC's own default is SERVING), so that no probe passes while the node is
 * still joining. A peer's trouble does not make it NOT_SERVING.
 */
final class GrpcHealth {

  /** How often {@link #refresh()} runs, in milliseconds. */
  static final long REFRESH_MILLIS = 1000;

  private static final Logger LOG = LoggerFactory.getLogger(GrpcHealth.class);

  private final HealthStatusManager manager = notServing();
  private final List<String> extraNames;
  private HealthChecker health;

  /** Creates the service, which also reports the node's health for {@code extraNames}. */
  GrpcHealth(List<String> extraNames) {
    this.extraNames = List.copyOf(extraNames);
  }

  /** Returns a status manager that reports NOT_SERVING for the node and {@code V1}. */
  static HealthStatusManager notServing() {
    HealthStatusManager health = new HealthStatusManager();
    health.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, ServingStatus.NOT_SERVING);
    health.setStatus(V1Grpc.SERVICE_NAME, ServingStatus.NOT_SERVING);
    return health;
  }

  /** Returns the service to add to the gRPC listener. */
  BindableService service() {
    return manager.getHealthService();
  }

  /** Reports the readiness of {@code checker} from the next {@link #refresh()} on. */
  synchronized void follow(HealthChecker checker) {
    this.health = checker;
  }

  /** Sets every reported status from readiness; nothing before {@link #follow}. */
  synchronized void refresh() {
    if (health == null) {
      return;
    }
    ServingStatus status = health.ready() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
    manager.setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, status);
    manager.setStatus(V1Grpc.SERVICE_NAME, status);
    for (String name : extraNames) {
      manager.setStatus(name, status);
    }
  }

  /** Runs {@link #refresh()}, logging a failure instead of throwing it. */
  void refreshQuietly() {
    try {
      refresh();
    } catch (RuntimeException e) {
      LOG.warn("health refresh failed", e);
    }
  }

  /** Reports NOT_SERVING for every service from now on, whatever refreshes later. */
  void stopServing() {
    manager.enterTerminalState();
  }
}
