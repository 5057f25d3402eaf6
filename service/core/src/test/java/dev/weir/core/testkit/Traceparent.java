package dev.weir.core.testkit;

import io.grpc.ClientInterceptor;
import io.grpc.Metadata;
import io.grpc.stub.MetadataUtils;

/** A W3C {@code traceparent} header, sampled, as a caller such as Envoy sends it. */
public final class Traceparent {

  private static final Metadata.Key<String> KEY =
      Metadata.Key.of("traceparent", Metadata.ASCII_STRING_MARSHALLER);

  private Traceparent() {}

  /** Returns the header's value for span {@code spanId} of trace {@code traceId}. */
  public static String header(String traceId, String spanId) {
    return "00-" + traceId + "-" + spanId + "-01";
  }

  /** Returns an interceptor that adds the header to every call of a channel. */
  public static ClientInterceptor interceptor(String traceId, String spanId) {
    Metadata headers = new Metadata();
    headers.put(KEY, header(traceId, spanId));
    return MetadataUtils.newAttachHeadersInterceptor(headers);
  }
}
