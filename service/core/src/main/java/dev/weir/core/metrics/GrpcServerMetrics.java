package dev.weir.core.metrics;

import dev.weir.core.time.Clock;
import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import java.util.Objects;
import java.util.UUID;

/**
 * Records every gRPC call a server handles: its method, final status code and latency, and a
 * refusal when the transport rejected a message as too large ({@code RESOURCE_EXHAUSTED}). Install
 * with {@code ServerBuilder.addStreamTracerFactory}.
 *
 * <p>Design: a stream tracer, unlike an interceptor, also sees calls that the transport closes
 * before any handler runs (an oversized message). The method label is taken from the method the
 * server resolved, never from the client's path, so an unknown method counts as {@code unknown}
 * and labels stay bounded. A call to {@link #WARM_UP_METHOD} whose {@link #WARM_UP_HEADER} carries
 * this factory's {@link #warmUpToken()}, a node's start-up warm-up of its own listener, is not
 * counted.
 */
public final class GrpcServerMetrics extends ServerStreamTracer.Factory {

  /** The method label of a call to a method the server does not serve. */
  public static final String UNKNOWN_METHOD = "unknown";

  /**
   * The method a node's start-up warm-up calls on its own listener, which no service serves (so
   * the call is answered {@code UNIMPLEMENTED}); the only method whose calls {@link
   * #WARM_UP_HEADER} hides.
   */
  public static final String WARM_UP_METHOD = "weir.WarmUp/Connect";

  /**
   * The header whose value, when it is the factory's {@link #warmUpToken()}, marks a {@link
   * #WARM_UP_METHOD} call as a start-up warm-up call, not counted.
   */
  public static final Metadata.Key<String> WARM_UP_HEADER =
      Metadata.Key.of("weir-warm-up", Metadata.ASCII_STRING_MARSHALLER);

  private static final ServerStreamTracer UNCOUNTED = new ServerStreamTracer() {};

  private final WeirMetrics metrics;
  private final Clock clock;
  private final String warmUpToken = UUID.randomUUID().toString();

  /** Creates the factory reporting to {@code metrics}, timing with {@code clock}. */
  public GrpcServerMetrics(WeirMetrics metrics, Clock clock) {
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /**
   * Returns the value of {@link #WARM_UP_HEADER} that keeps a warm-up call uncounted: random, made
   * when the factory is.
   */
  public String warmUpToken() {
    return warmUpToken;
  }

  @Override
  public ServerStreamTracer newServerStreamTracer(String fullMethodName, Metadata headers) {
    if (fullMethodName.equals(WARM_UP_METHOD) && warmUpToken.equals(headers.get(WARM_UP_HEADER))) {
      return UNCOUNTED;
    }
    return new CallTracer(clock.monotonicNanos());
  }

  private final class CallTracer extends ServerStreamTracer {
    private final long startNanos;
    private volatile String method = UNKNOWN_METHOD;

    CallTracer(long startNanos) {
      this.startNanos = startNanos;
    }

    @Override
    public void serverCallStarted(ServerCallInfo<?, ?> callInfo) {
      method = callInfo.getMethodDescriptor().getFullMethodName();
    }

    @Override
    public void streamClosed(Status status) {
      if (status.getCode() == Status.Code.RESOURCE_EXHAUSTED) {
        metrics.refused(RefusalReason.GRPC_MESSAGE_TOO_LARGE);
      }
      metrics.grpcCall(method, status.getCode(), clock.monotonicNanos() - startNanos);
    }
  }
}
