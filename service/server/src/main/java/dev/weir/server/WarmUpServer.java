package dev.weir.server;

import dev.weir.core.Weir;
import dev.weir.core.WeirMember;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.time.Clock;
import dev.weir.envoy.EnvoyAdapter;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.gubernator.NativeCheck;
import dev.weir.gubernator.V1Service;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The listener a {@link DecisionWarmUp} calls: a {@link ClientGrpcListener} on a loopback port of
 * its own, serving {@code pb.gubernator.V1} and, with the node's Envoy adapter, {@code
 * ShouldRateLimit} from that adapter's config, through a single-node cluster member with a store,
 * meters and registry of its own. It runs the same classes as the node's own front doors, so the
 * code it warms is theirs, while the node's counters, meters and gRPC port see none of its calls.
 */
final class WarmUpServer implements AutoCloseable {

  /**
   * The buckets the warm-up's store holds: fewer than the warm-up's requests name, so that the
   * store is full and makes room as a busy node's does.
   */
  static final int BUCKETS = 512;

  private final ClientGrpcListener listener;
  private final WeirMember member;
  private final PrometheusMeterRegistry registry;

  private WarmUpServer(
      ClientGrpcListener listener, WeirMember member, PrometheusMeterRegistry registry) {
    this.listener = listener;
    this.member = member;
    this.registry = registry;
  }

  /**
   * Starts the listener on a loopback port and its member; serves {@code ShouldRateLimit} when
   * {@code envoy} is not null. The member logs its start, its cluster of one and its
   * close at DEBUG, as they are no news to an operator.
   *
   * @param limits the node's input limits, the largest gRPC message among them
   * @param clock the clock decisions are made at
   * @throws IOException when no loopback port can be bound
   */
  static WarmUpServer start(InputLimits limits, Clock clock, EnvoyAdapter envoy)
      throws IOException {
    PrometheusMeterRegistry registry = PrometheusEndpoint.newRegistry();
    MicrometerMetrics metrics = new MicrometerMetrics(registry);
    CheckMeter meter = new CheckMeter(metrics);
    ClientGrpcListener listener = null;
    WeirMember member = null;
    try {
      listener =
          ClientGrpcListener.start(
              new ClientGrpcListener.Settings(
                  new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                  limits.maxGrpcMessageBytes(),
                  Optional.empty(),
                  envoy != null,
                  null,
                  null,
                  Optional.empty()),
              new GrpcHealth(List.of()).service(),
              metrics,
              clock);
      member =
          Weir.builder()
              .server(listener.server())
              .store(new ClockBucketStore(clock, BUCKETS))
              .clock(clock)
              .metrics(metrics)
              .inputLimits(limits)
              .lifecycleAtDebug()
              .build()
              .start();
      listener.serve(
          new V1Service(
              new NativeCheck(member.service(), limits, meter), member.cluster().nodeHealth()));
      if (envoy != null) {
        listener.serveRateLimit(
            envoy.warmUpService(
                member.service(),
                clock,
                new EnvoyMetrics(registry, EnvoyMetrics.Observer.NONE),
                limits,
                meter));
      }
      return new WarmUpServer(listener, member, registry);
    } catch (IOException | RuntimeException e) {
      try {
        new WarmUpServer(listener, member, registry).close();
      } catch (RuntimeException closing) {
        e.addSuppressed(closing);
      }
      throw e;
    }
  }

  /** Returns the loopback address the listener is bound to. */
  InetSocketAddress address() {
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), listener.server().getPort());
  }

  /** Stops the listener at once and closes the member and the registry, each even if one fails. */
  @Override
  public void close() {
    try {
      if (listener != null) {
        listener.server().shutdownNow();
      }
      if (member != null) {
        member.close(Duration.ZERO);
      }
    } finally {
      registry.close();
    }
  }
}
