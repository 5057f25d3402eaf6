package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Metadata;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The W3C trace context Weir reads from a gRPC call's metadata. */
class TraceContextsTest {

  private static final Metadata.Key<String> TRACEPARENT =
      Metadata.Key.of("traceparent", Metadata.ASCII_STRING_MARSHALLER);
  private static final Metadata.Key<String> TRACESTATE =
      Metadata.Key.of("tracestate", Metadata.ASCII_STRING_MARSHALLER);

  private static final String FIRST = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  private static final String SECOND = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

  @Test
  void fromHeaders_oneTraceparent_itsSpanIsTheParent() {
    Metadata headers = new Metadata();
    headers.put(TRACEPARENT, FIRST);

    SpanContext parent = spanContext(headers);

    assertThat(parent.getTraceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
    assertThat(parent.isRemote()).isTrue();
  }

  @Test
  void fromHeaders_twoTraceparents_noParentSoTheCallStartsATrace() {
    Metadata headers = new Metadata();
    headers.put(TRACEPARENT, FIRST);
    headers.put(TRACEPARENT, SECOND);

    assertThat(spanContext(headers).isValid()).isFalse();
  }

  @Test
  void fromHeaders_tracestateInTwoEntries_bothKept() {
    Metadata headers = new Metadata();
    headers.put(TRACEPARENT, FIRST);
    headers.put(TRACESTATE, "a=1");
    headers.put(TRACESTATE, "b=2");

    SpanContext parent = spanContext(headers);

    assertThat(parent.getTraceState().asMap()).containsEntry("a", "1").containsEntry("b", "2");
  }

  @Test
  void fromHeaders_emptyTracestateEntry_skippedAndTheOthersKept() {
    Metadata headers = new Metadata();
    headers.put(TRACEPARENT, FIRST);
    headers.put(TRACESTATE, "");
    headers.put(TRACESTATE, "b=2");

    SpanContext parent = spanContext(headers);

    assertThat(parent.getTraceState().asMap()).containsExactlyEntriesOf(Map.of("b", "2"));
  }

  @Test
  void fromHeaders_malformedTraceparent_noParent() {
    for (String bad :
        new String[] {
          "", "00", "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
          "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
          "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
          "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
          "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
          "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        }) {
      Metadata headers = new Metadata();
      headers.put(TRACEPARENT, bad);
      assertThat(spanContext(headers).isValid()).as(bad).isFalse();
    }
  }

  private static SpanContext spanContext(Metadata headers) {
    return Span.fromContext(TraceContexts.fromHeaders(headers)).getSpanContext();
  }
}
