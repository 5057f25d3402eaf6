package dev.weir.core.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.collector.trace.v1.TraceServiceGrpc;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A real OTLP/gRPC trace receiver on loopback: opentelemetry-proto's collector {@code
 * TraceService}, keeping every span exported to it with its resource's {@code service.name}.
 */
public final class OtlpReceiver implements AutoCloseable {

  /** One received span, the service that sent it and that service's instance id. */
  public record Received(String service, String instance, Span span) {

    /** Returns {@code service:span name}, how a failed assertion names the span. */
    public String label() {
      return service + ":" + span.getName();
    }
  }

  private final List<Received> spans = new CopyOnWriteArrayList<>();
  private final Server server;

  /** Starts the receiver on an ephemeral loopback port. */
  public OtlpReceiver() throws IOException {
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .addService(
                new TraceServiceGrpc.TraceServiceImplBase() {
                  @Override
                  public void export(
                      ExportTraceServiceRequest request,
                      StreamObserver<ExportTraceServiceResponse> answer) {
                    for (ResourceSpans resource : request.getResourceSpansList()) {
                      List<KeyValue> attributes = resource.getResource().getAttributesList();
                      String service = attribute(attributes, "service.name");
                      String instance = attribute(attributes, "service.instance.id");
                      for (ScopeSpans scope : resource.getScopeSpansList()) {
                        scope
                            .getSpansList()
                            .forEach(s -> spans.add(new Received(service, instance, s)));
                      }
                    }
                    answer.onNext(ExportTraceServiceResponse.getDefaultInstance());
                    answer.onCompleted();
                  }
                })
            .build()
            .start();
  }

  /** Returns {@code http://127.0.0.1:port}, the receiver's OTLP/gRPC endpoint. */
  public String endpoint() {
    return "http://127.0.0.1:" + server.getPort();
  }

  /** Returns the receiver's port. */
  public int port() {
    return server.getPort();
  }

  /** Returns every span received so far. */
  public List<Received> spans() {
    return new ArrayList<>(spans);
  }

  /** Returns the spans received so far of trace {@code traceId} (32 lower-case hex digits). */
  public List<Received> trace(String traceId) {
    return spans.stream().filter(s -> hex(s.span().getTraceId()).equals(traceId)).toList();
  }

  /** Returns the one span of {@code trace} named {@code name}, failing when there is not one. */
  public static Received only(List<Received> trace, String name) {
    List<Received> named = trace.stream().filter(s -> s.span().getName().equals(name)).toList();
    assertThat(named).as("spans named " + name + " in " + labels(trace)).hasSize(1);
    return named.get(0);
  }

  /** Returns each span's {@link Received#label()}, in the order received. */
  public static List<String> labels(List<Received> trace) {
    return trace.stream().map(Received::label).toList();
  }

  /** Returns a trace or span id as lower-case hex, as {@code traceparent} writes it. */
  public static String hex(ByteString id) {
    return HexFormat.of().formatHex(id.toByteArray());
  }

  private static String attribute(List<KeyValue> attributes, String key) {
    for (KeyValue kv : attributes) {
      if (kv.getKey().equals(key)) {
        return kv.getValue().getStringValue();
      }
    }
    return "";
  }

  @Override
  public void close() throws InterruptedException {
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }
}
