package dev.weir.server.bench;

import dev.weir.core.Weir;
import dev.weir.core.WeirMember;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.time.SystemClock;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.service.ShouldRateLimitHandler;
import dev.weir.gubernator.NativeCheck;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.server.PrometheusEndpoint;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * The decision path without the transport: what a node does for one {@code ShouldRateLimit} (the
 * two descriptors of {@code ../shared/bench/edge.yaml}) and one {@code GetRateLimits} call (1 and 10
 * items) once gRPC has parsed it, through a started single-node member with metrics on, as {@code
 * WeirNode} wires it. The difference to a do-nothing server's time per call is this cost.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class DecisionPathBenchmark {

  private static final String EDGE =
      """
      domain: edge
      descriptors:
        - key: remote_address
          rate_limit: {unit: second, requests_per_unit: 1000000000}
        - key: header_match
          value: api
          descriptors:
            - key: path
              rate_limit: {unit: minute, requests_per_unit: 1000000000}
      """;

  private WeirMember member;
  private ShouldRateLimitHandler envoy;
  private NativeCheck natives;
  private RateLimitRequest rls;
  private GetRateLimitsReq v1;
  private GetRateLimitsReq v1x10;

  /** Starts a one-node member and the two front doors' request paths over it. */
  @Setup(Level.Trial)
  public void setUp() throws Exception {
    member = Weir.builder().advertiseAddress("127.0.0.1:0").start();
    PrometheusMeterRegistry registry = PrometheusEndpoint.newRegistry();
    CheckMeter meter = new CheckMeter(new MicrometerMetrics(registry));
    EnvoySettings settings = EnvoySettings.fromEnvironment(Map.of());
    ConfigHolder config = new ConfigHolder();
    config.set(
        new ConfigLoader(settings.loadOptions()).compile(List.of(new ConfigFile("edge.yaml", EDGE))));
    envoy =
        new ShouldRateLimitHandler(
            config,
            member.service(),
            SystemClock.INSTANCE,
            settings,
            new EnvoyMetrics(registry),
            InputLimits.DEFAULTS,
            meter);
    natives = new NativeCheck(member.service(), InputLimits.DEFAULTS, meter);
    rls =
        RateLimitRequest.newBuilder()
            .setDomain("edge")
            .addDescriptors(descriptor("remote_address", "10.0.0.1"))
            .addDescriptors(descriptor("header_match", "api", "path", "/v1/users"))
            .build();
    v1 = items(1);
    v1x10 = items(10);
  }

  /** Stops the member. */
  @TearDown(Level.Trial)
  public void tearDown() {
    member.close();
  }

  private static RateLimitDescriptor descriptor(String... keyValues) {
    RateLimitDescriptor.Builder b = RateLimitDescriptor.newBuilder();
    for (int i = 0; i < keyValues.length; i += 2) {
      b.addEntries(
          RateLimitDescriptor.Entry.newBuilder().setKey(keyValues[i]).setValue(keyValues[i + 1]));
    }
    return b.build();
  }

  private static GetRateLimitsReq items(int n) {
    GetRateLimitsReq.Builder b = GetRateLimitsReq.newBuilder();
    for (int i = 0; i < n; i++) {
      b.addRequests(
          RateLimitReq.newBuilder()
              .setName("bench_requests")
              .setUniqueKey("account:" + i)
              .setHits(1)
              .setLimit(1_000_000_000_000L)
              .setDuration(3_600_000));
    }
    return b.build();
  }

  /** One {@code ShouldRateLimit} with two descriptors. */
  @Benchmark
  public RateLimitResponse shouldRateLimit() {
    return envoy.decide(rls).join();
  }

  /** One {@code GetRateLimits} with one item. */
  @Benchmark
  public GetRateLimitsResp getRateLimits1() {
    return natives.decide(v1).join();
  }

  /** One {@code GetRateLimits} with ten items. */
  @Benchmark
  public GetRateLimitsResp getRateLimits10() {
    return natives.decide(v1x10).join();
  }
}
