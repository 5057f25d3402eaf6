package dev.weir.server;

import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.time.Clock;
import dev.weir.envoy.EnvoyAdapter;
import dev.weir.envoy.service.WarmUpRequests;
import dev.weir.gubernator.V1Methods;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A starting node's warm-up, within one budget ({@code WEIR_WARMUP}): first its gRPC listener's
 * transport ({@link TransportWarmUp}, skipped when that listener serves TLS), then the decision
 * path ({@link DecisionWarmUp} against a {@link WarmUpServer}) with what is left, each logged in
 * one line. The decision path is warmed with {@code ShouldRateLimit} calls for the rules of the
 * Envoy adapter's config when it has a limited rule, else with {@code GetRateLimits} calls. A
 * warm-up that fails is logged as a warning and never keeps the node from starting; one the
 * process is told to stop during ends at once.
 */
final class NodeWarmUp {

  private static final Logger LOG = LoggerFactory.getLogger(NodeWarmUp.class);

  /** {@code WEIR_WARMUP}: the most a starting node spends warming up, {@code 0s} for none. */
  static final EnvVar WARMUP = EnvVar.of("WEIR_WARMUP");

  /** The warm-up budget when {@code WEIR_WARMUP} is not set. */
  static final Duration DEFAULT_BUDGET = Duration.ofSeconds(30);

  /** The largest budget {@code WEIR_WARMUP} accepts. */
  static final Duration MAX_BUDGET = Duration.ofMinutes(2);

  /** How many requests the decision warm-up cycles through. */
  static final int REQUESTS = 4096;

  /**
   * What a node's warm-up did.
   *
   * @param transport the transport warm-up, or null when it did not run
   * @param decisions the decision warm-up, or null when it did not run
   * @param method the method the decision warm-up called, or null
   */
  record Result(TransportWarmUp.Result transport, DecisionWarmUp.Result decisions, String method) {}

  private NodeWarmUp() {}

  /** Returns {@code WEIR_WARMUP} from {@code env}: between 0 and two minutes, 30 s by default. */
  static Duration budget(EnvReader env) {
    return env.duration(WARMUP, DEFAULT_BUDGET, Duration.ZERO, MAX_BUDGET);
  }

  /**
   * Warms up the node whose gRPC listener is {@code grpc} within {@code budget} on {@code clock};
   * returns what ran, or null when neither step did.
   *
   * @param grpc the node's gRPC listener
   * @param tls whether that listener serves TLS (its transport is then not warmed)
   * @param envoy the node's Envoy adapter, or null when it is off
   * @param limits the node's input limits, the largest gRPC message among them
   * @param stopping says that the process was told to stop: the warm-up then ends at once
   */
  static Result run(
      Duration budget,
      Clock clock,
      ClientGrpcListener grpc,
      boolean tls,
      EnvoyAdapter envoy,
      InputLimits limits,
      BooleanSupplier stopping) {
    WarmUpDeadline deadline = WarmUpDeadline.after(clock, budget.toNanos(), stopping);
    TransportWarmUp.Result transport = null;
    DecisionWarmUp.Result decisions = null;
    String method = null;
    try {
      if (tls) {
        LOG.info("transport warm-up skipped: the gRPC listener serves TLS");
      } else {
        transport = transport(grpc, budget, clock, stopping);
      }
      List<byte[]> rules = envoy == null ? List.of() : envoyRequests(envoy);
      method =
          rules.isEmpty()
              ? V1Methods.GET_RATE_LIMITS.getFullMethodName()
              : RateLimitServiceGrpc.getShouldRateLimitMethod().getFullMethodName();
      List<byte[]> messages = rules.isEmpty() ? NativeWarmUpRequests.of(REQUESTS) : rules;
      decisions =
          decisions(
              deadline, clock, method, messages, rules.isEmpty() ? null : envoy, limits, stopping);
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("warm-up stopped early: {}", e.toString());
    }
    if (stopping.getAsBoolean()) {
      LOG.info("warm-up cut short: the node is stopping");
    }
    if (transport == null && decisions == null) {
      return null;
    }
    return new Result(transport, decisions, decisions == null ? null : method);
  }

  private static TransportWarmUp.Result transport(
      ClientGrpcListener grpc, Duration budget, Clock clock, BooleanSupplier stopping) {
    List<? extends SocketAddress> sockets = grpc.server().getListenSockets();
    if (sockets.isEmpty() || !(sockets.get(0) instanceof InetSocketAddress bound)) {
      LOG.info("transport warm-up skipped: the gRPC listener has no IP socket");
      return null;
    }
    TransportWarmUp.Result done =
        TransportWarmUp.run(
            TransportWarmUp.reachable(bound), budget, clock, grpc.warmUpToken(), stopping);
    String line =
        "transport warm-up: "
            + done.connections()
            + " connections, "
            + done.answered()
            + " calls answered in "
            + done.elapsed().toMillis()
            + " ms";
    if (done.failure() == null) {
      LOG.info(line);
    } else {
      LOG.warn(line + ", stopped early: " + done.failure());
    }
    return done;
  }

  /**
   * Starts a {@link WarmUpServer}, runs the decision warm-up against it until {@code deadline} and
   * closes it; returns what the warm-up did, or null when it did not run.
   */
  private static DecisionWarmUp.Result decisions(
      WarmUpDeadline deadline,
      Clock clock,
      String method,
      List<byte[]> messages,
      EnvoyAdapter envoy,
      InputLimits limits,
      BooleanSupplier stopping) {
    DecisionWarmUp.Result done = null;
    String failure = null;
    try (WarmUpServer server =
        deadline.before() ? WarmUpServer.start(limits, clock, envoy) : null) {
      Duration left = Duration.ofNanos(deadline.leftNanos());
      if (server != null && !left.isZero()) {
        done =
            DecisionWarmUp.run(
                server.address(),
                "/" + method,
                messages,
                left,
                clock,
                compileMillis(),
                stopping);
      }
    } catch (IOException | RuntimeException e) {
      failure = e.toString();
    }
    if (done == null) {
      if (failure == null) {
        LOG.info("decision warm-up skipped: the budget was spent (WEIR_WARMUP)");
      } else {
        LOG.warn("decision warm-up skipped: {}", failure);
      }
      return null;
    }
    String line =
        "decision warm-up: "
            + done.answered()
            + " "
            + method.substring(method.lastIndexOf('/') + 1)
            + " calls answered in "
            + done.elapsed().toMillis()
            + " ms, "
            + (done.settled() ? "the JIT compiler settled" : "budget spent (WEIR_WARMUP)");
    if (done.failure() == null) {
      LOG.info(line);
    } else {
      LOG.warn(line + ", stopped early: " + done.failure());
    }
    return done;
  }

  /** Returns the JVM's total compilation time in milliseconds, or a constant when not tracked. */
  private static LongSupplier compileMillis() {
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
      return () -> 0;
    }
    return jit::getTotalCompilationTime;
  }

  /**
   * Returns {@link #REQUESTS} serialized requests for the Envoy config's rules, leaving out any
   * longer than {@link DecisionWarmUp#MAX_MESSAGE_BYTES}; none without a limited rule.
   */
  private static List<byte[]> envoyRequests(EnvoyAdapter envoy) {
    return envoy
        .config()
        .map(config -> WarmUpRequests.from(config, REQUESTS))
        .orElse(List.of())
        .stream()
        .map(RateLimitRequest::toByteArray)
        .filter(bytes -> bytes.length <= DecisionWarmUp.MAX_MESSAGE_BYTES)
        .toList();
  }
}
