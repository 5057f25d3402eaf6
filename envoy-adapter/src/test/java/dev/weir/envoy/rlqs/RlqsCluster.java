package dev.weir.envoy.rlqs;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DescriptorConfigException;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.service.UnknownDomains;
import io.grpc.Channel;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;

/**
 * An in-JVM Weir cluster serving RLQS in fake time: a {@link LocalCluster} of {@code n} nodes (real
 * peer listeners on loopback) whose quota owners time on a {@link FakeScheduler}, and per node an
 * {@link RlqsService} on a gRPC server of its own on loopback ({@code directExecutor}, as the
 * node's client port runs), answering from one descriptor config.
 *
 * <p>{@link #settle} waits until every message in flight has arrived: every report a proxy sent was
 * taken and answered, every push delivered, every response read by its proxy.
 */
final class RlqsCluster implements AutoCloseable {

  private final FakeClock clock;
  private final FakeScheduler timers;
  private final LocalCluster cluster;
  private final ConfigHolder config = new ConfigHolder();
  private final RecordingMetrics metrics = new RecordingMetrics();
  private final SimpleMeterRegistry envoyRegistry = new SimpleMeterRegistry();
  private final EnvoyMetrics envoyMetrics = new EnvoyMetrics(envoyRegistry);
  private final List<RlqsService> services = new ArrayList<>();
  private final List<Server> servers = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();

  private RlqsCluster(
      FakeClock clock,
      int n,
      String yaml,
      RlqsSettings settings,
      UnaryOperator<QuotaReports> reports) {
    this.clock = clock;
    this.timers = new FakeScheduler(clock);
    if (yaml != null) {
      reload(yaml);
    }
    RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
    this.cluster =
        LocalCluster.start(
            n,
            ClusterSettings.defaults(),
            clock,
            store -> new LocalLimiter(engine, store, clock)::decide,
            null,
            timers);
    for (LocalCluster.Node node : cluster.nodes()) {
      RlqsService service =
          new RlqsService(
              config,
              reports.apply(node.cluster().quota()::report),
              node.address(),
              settings,
              InputLimits.DEFAULTS,
              clock,
              RlqsMetrics.unregistered(),
              new CheckMeter(metrics),
              new UnknownDomains(envoyMetrics, clock));
      node.cluster().quota().receiveWith(service);
      try {
        Server server =
            NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                .directExecutor()
                .addService(service)
                .build()
                .start();
        servers.add(server);
        channels.add(
            NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext().build());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      services.add(service);
    }
  }

  /**
   * Starts {@code n} nodes answering from the descriptor config {@code yaml}, or with no config
   * loaded when it is null.
   */
  static RlqsCluster start(FakeClock clock, int n, String yaml, RlqsSettings settings) {
    return new RlqsCluster(clock, n, yaml, settings, UnaryOperator.identity());
  }

  /** Starts the nodes as {@link #start} does, each reporting through {@code reports} of its own. */
  static RlqsCluster start(
      FakeClock clock,
      int n,
      String yaml,
      RlqsSettings settings,
      UnaryOperator<QuotaReports> reports) {
    return new RlqsCluster(clock, n, yaml, settings, reports);
  }

  /** Replaces the descriptor config with {@code yaml} and tells every node's RLQS service. */
  void reload(String yaml) {
    try {
      config.set(
          new ConfigLoader(ConfigLoadOptions.DEFAULTS)
              .compile(List.of(new ConfigFile("rlqs.yaml", yaml))));
    } catch (DescriptorConfigException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
    services.forEach(RlqsService::configChanged);
  }

  /** Returns the channels to each node's RLQS server, in node order. */
  List<Channel> endpoints() {
    return List.copyOf(channels);
  }

  /** Returns node {@code i}'s RLQS service. */
  RlqsService service(int i) {
    return services.get(i);
  }

  /** Returns what every node's RLQS service counted in the refusal counter. */
  RecordingMetrics metrics() {
    return metrics;
  }

  /** Returns the registry of the Envoy adapter's meters every node's RLQS service counts in. */
  SimpleMeterRegistry envoyRegistry() {
    return envoyRegistry;
  }

  /** Returns the in-JVM cluster. */
  LocalCluster cluster() {
    return cluster;
  }

  /** Returns the scheduler the quota owners' timers run on. */
  FakeScheduler timers() {
    return timers;
  }

  /**
   * Waits until the nodes took every report the proxies sent ({@code reportsSent}), have nothing
   * awaited, and the proxies read every response the nodes sent ({@code responsesReceived}).
   */
  void settle(LongSupplier reportsSent, LongSupplier responsesReceived) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    int quietChecks = 0;
    while (quietChecks < 2) {
      if (quiet(reportsSent, responsesReceived)) {
        quietChecks++;
      } else {
        quietChecks = 0;
        if (System.nanoTime() > deadline) {
          throw new AssertionError(
              "RLQS traffic did not settle within 10 s: proxies sent "
                  + reportsSent.getAsLong()
                  + " reports, read "
                  + responsesReceived.getAsLong()
                  + " responses; nodes: "
                  + services.stream().map(RlqsService::stats).toList());
        }
        LockSupport.parkNanos(20_000);
      }
    }
  }

  private boolean quiet(LongSupplier reportsSent, LongSupplier responsesReceived) {
    long received = 0;
    long sent = 0;
    long pending = 0;
    for (RlqsService s : services) {
      RlqsService.Stats stats = s.stats();
      received += stats.reportsReceived();
      sent += stats.responsesSent();
      pending += stats.pending();
    }
    for (LocalCluster.Node node : cluster.nodes()) {
      pending += node.cluster().quota().inFlight();
    }
    return pending == 0
        && received == reportsSent.getAsLong()
        && sent == responsesReceived.getAsLong();
  }

  /** Moves fake time by {@code step}, running the owners' timers, and settles. */
  void advance(Duration step, LongSupplier reportsSent, LongSupplier responsesReceived) {
    timers.advance(step);
    settle(reportsSent, responsesReceived);
  }

  @Override
  public void close() {
    channels.forEach(ManagedChannel::shutdownNow);
    for (Server server : servers) {
      server.shutdownNow();
      try {
        server.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    cluster.close();
  }
}
