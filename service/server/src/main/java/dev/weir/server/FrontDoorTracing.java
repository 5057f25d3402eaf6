package dev.weir.server;

import dev.weir.core.grpc.MalformedRequests;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.proto.gubernator.V1Grpc;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The server interceptor that traces each front-door call ({@code ShouldRateLimit}, {@code
 * GetRateLimits}; the other methods of their services, such as {@code V1/HealthCheck}, which
 * probes call, pass untraced): a server span continuing the W3C {@code traceparent} of the call's metadata
 * (what Envoy's rate-limit filter sends), current while the handler runs so that forwards become
 * its children, with the domain or rate-limit names, the item count and the outcome, never a
 * descriptor's or key's value. Installed only when tracing is on.
 */
final class FrontDoorTracing implements ServerInterceptor {

  /** The Envoy domain of a {@code ShouldRateLimit} call. */
  static final AttributeKey<String> DOMAIN = AttributeKey.stringKey("weir.domain");

  /** The full names of the methods that decide rate limits, the ones traced. */
  static final Set<String> TRACED_METHODS =
      Set.of(
          V1Grpc.getGetRateLimitsMethod().getFullMethodName(),
          RateLimitServiceGrpc.getShouldRateLimitMethod().getFullMethodName());

  private final Tracer tracer;

  FrontDoorTracing(Tracer tracer) {
    this.tracer = tracer;
  }

  @Override
  public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
      ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
    MethodDescriptor<ReqT, RespT> method = call.getMethodDescriptor();
    if (!TRACED_METHODS.contains(method.getFullMethodName())) {
      return next.startCall(call, headers);
    }
    Context parent = TraceContexts.fromHeaders(headers);
    Span span =
        tracer
            .spanBuilder(method.getFullMethodName())
            .setParent(parent)
            .setSpanKind(SpanKind.SERVER)
            .startSpan();
    // A span the sampler left out records nothing: its attributes are not even computed.
    if (span.isRecording()) {
      span.setAttribute("rpc.system", "grpc");
      span.setAttribute("rpc.service", String.valueOf(method.getServiceName()));
      span.setAttribute("rpc.method", String.valueOf(method.getBareMethodName()));
    }
    Context context = parent.with(span);
    TracedCall<ReqT, RespT> traced = new TracedCall<>(call, span);
    ServerCall.Listener<ReqT> listener;
    try (Scope ignored = context.makeCurrent()) {
      listener = next.startCall(traced, headers);
    }
    return new TracedListener<>(listener, context, traced);
  }

  /** Records the request's attributes on {@code span}. */
  static void describeRequest(Span span, Object message) {
    if (!span.isRecording()) {
      return;
    }
    if (message instanceof io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest envoy) {
      span.setAttribute(DOMAIN, envoy.getDomain());
      span.setAttribute(OtelClusterTracing.ITEMS, (long) envoy.getDescriptorsCount());
    } else if (message instanceof List<?> items) {
      List<RateLimitRequest> requests = new ArrayList<>(items.size());
      for (Object item : items) {
        if (item instanceof RateLimitRequest r) {
          requests.add(r);
        }
      }
      span.setAttribute(OtelClusterTracing.ITEMS, (long) requests.size());
      span.setAttribute(OtelClusterTracing.NAMES, OtelClusterTracing.names(requests));
    }
  }

  /** Records the answer's outcome on {@code span}. */
  static void describeAnswer(Span span, Object message) {
    if (!span.isRecording()) {
      return;
    }
    if (message instanceof io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse envoy) {
      span.setAttribute(OtelClusterTracing.OUTCOME, envoy.getOverallCode().name());
    } else if (message instanceof List<?> answers) {
      long over = 0;
      long errors = 0;
      for (Object answer : answers) {
        if (answer instanceof RateLimitResponse r) {
          if (r.isError()) {
            errors++;
          } else if (r.status() == Status.OVER_LIMIT) {
            over++;
          }
        }
      }
      span.setAttribute(OtelClusterTracing.OVER_LIMIT_ITEMS, over);
      span.setAttribute(
          OtelClusterTracing.OUTCOME,
          errors > 0 ? "ERROR" : over > 0 ? "OVER_LIMIT" : "UNDER_LIMIT");
    }
  }

  /** The call as the handler sees it: its answer and status end the span. */
  private static final class TracedCall<ReqT, RespT>
      extends ForwardingServerCall.SimpleForwardingServerCall<ReqT, RespT> {
    private final Span span;
    private final AtomicBoolean ended = new AtomicBoolean();

    TracedCall(ServerCall<ReqT, RespT> call, Span span) {
      super(call);
      this.span = span;
    }

    @Override
    public void sendMessage(RespT message) {
      describeAnswer(span, message);
      super.sendMessage(message);
    }

    @Override
    public void close(io.grpc.Status status, Metadata trailers) {
      endWith(status);
      super.close(status, trailers);
    }

    /**
     * Ends the span of a call closed without this wrapper seeing it: one whose request {@link
     * MalformedRequests} refused before the handler saw it.
     */
    void endIfClosedPast() {
      if (ended.get()) {
        return;
      }
      io.grpc.Status refusal = MalformedRequests.refusal(delegate());
      if (refusal != null) {
        endWith(refusal);
      } else {
        end();
      }
    }

    private void endWith(io.grpc.Status status) {
      if (span.isRecording()) {
        span.setAttribute("rpc.grpc.status_code", (long) status.getCode().value());
      }
      if (!status.isOk()) {
        span.setStatus(StatusCode.ERROR, status.getCode().name());
      }
      end();
    }

    void end() {
      if (ended.compareAndSet(false, true)) {
        span.end();
      }
    }
  }

  /** The handler's listener, run with the call's span current. */
  private static final class TracedListener<ReqT>
      extends ForwardingServerCallListener.SimpleForwardingServerCallListener<ReqT> {
    private final Context context;
    private final TracedCall<ReqT, ?> call;

    TracedListener(ServerCall.Listener<ReqT> delegate, Context context, TracedCall<ReqT, ?> call) {
      super(delegate);
      this.context = context;
      this.call = call;
    }

    @Override
    public void onMessage(ReqT message) {
      describeRequest(call.span, message);
      try (Scope ignored = context.makeCurrent()) {
        super.onMessage(message);
      }
    }

    @Override
    public void onHalfClose() {
      try (Scope ignored = context.makeCurrent()) {
        super.onHalfClose();
      }
    }

    @Override
    public void onCancel() {
      try (Scope ignored = context.makeCurrent()) {
        super.onCancel();
      } finally {
        call.span.setStatus(StatusCode.ERROR, "CANCELLED");
        call.end();
      }
    }

    @Override
    public void onComplete() {
      try (Scope ignored = context.makeCurrent()) {
        super.onComplete();
      } finally {
        call.endIfClosedPast();
      }
    }

    @Override
    public void onReady() {
      try (Scope ignored = context.makeCurrent()) {
        super.onReady();
      }
    }
  }
}
