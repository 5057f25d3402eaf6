package dev.weir.gubernator;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.LocalRateLimitService;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.gubernator.http.GatewayRoutes;
import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpCall;
import dev.weir.http.HttpHandler;
import dev.weir.http.HttpRoute;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.Status;
import io.grpc.MethodDescriptor;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Coverage-guided fuzzing of the native front door over the real local engine: any bytes as a
 * {@code GetRateLimits} request through {@link V1Methods#GET_RATE_LIMITS}' marshallers (which must
 * read and write exactly what protobuf-java's generated classes read and write, reading a message
 * with more than 1000 items only up to the first one over) and {@link
 * V1Service} (the gRPC handler, on {@link NativeCheck}), and any {@code POST /v1/GetRateLimits}
 * body through {@link GatewayRoutes}' handler. Every item
 * gets an answer or its own error, the call is never failed with {@code UNKNOWN} or {@code
 * INTERNAL}, and a body that is not a request is a 400 with a message. Seeds: {@code
 * NativeFrontDoorFuzzTestInputs/<method>} in the test resources.
 */
class NativeFrontDoorFuzzTest {

  private static final FakeClock CLOCK = new FakeClock(1_767_225_600_000L);
  private static final LocalRateLimitService CORE =
      new LocalRateLimitService(
          new LocalLimiter(
              new RateLimitEngine(ZoneOffset.UTC), new ClockBucketStore(CLOCK, 10_000), CLOCK),
          "127.0.0.1:1051");
  private static final NativeCheck CHECK =
      new NativeCheck(CORE, InputLimits.DEFAULTS, new CheckMeter(new RecordingMetrics()));
  private static final NodeHealth HEALTH = CORE::health;
  private static final V1Service V1 = new V1Service(CHECK, HEALTH);
  private static final MethodDescriptor<List<RateLimitRequest>, List<RateLimitResponse>>
      METHOD = V1Methods.GET_RATE_LIMITS;
  private static final HttpHandler GATEWAY =
      new GatewayRoutes(CHECK, HEALTH)
          .routes().stream()
              .filter(route -> route.path().equals("/v1/GetRateLimits"))
              .map(HttpRoute::handler)
              .findFirst()
              .orElseThrow();

  @FuzzTest(maxDuration = "10s")
  void getRateLimits(byte[] bytes) {
    GetRateLimitsReq request = null;
    try {
      request = GetRateLimitsReq.parseFrom(bytes);
    } catch (InvalidProtocolBufferException notAMessage) {
      // Refused below, unless the fault follows more items than a call may carry.
    }
    List<RateLimitRequest> items;
    try {
      items = METHOD.parseRequest(new ByteArrayInputStream(bytes));
    } catch (StatusRuntimeException refused) {
      assertThat(request).as("the front door refuses only what protobuf-java refuses").isNull();
      assertThat(refused).hasCauseInstanceOf(InvalidProtocolBufferException.class);
      return;
    }
    if (items.size() > RateLimitService.MAX_BATCH_SIZE) {
      assertThat(items)
          .as("a message with too many items is read up to the first one over")
          .hasSize(RateLimitService.MAX_BATCH_SIZE + 1);
      if (request != null) {
        assertThat(items).isEqualTo(ProtoMapping.toModel(request).subList(0, items.size()));
      }
    } else {
      assertThat(request).as("the front door refuses what protobuf-java refuses").isNotNull();
      assertThat(items)
          .as("the front door reads what protobuf-java reads")
          .isEqualTo(ProtoMapping.toModel(request));
    }
    Recorded<List<RateLimitResponse>> answer = new Recorded<>();
    V1.getRateLimits(items, answer);

    assertThat(answer.completed).as("answered on the calling thread").isTrue();
    if (answer.error != null) {
      assertThat(io.grpc.Status.fromThrowable(answer.error).getCode())
          .isEqualTo(io.grpc.Status.Code.OUT_OF_RANGE);
      assertThat(items).hasSizeGreaterThan(RateLimitService.MAX_BATCH_SIZE);
    } else {
      assertThat(answer.values).hasSize(1);
      GetRateLimitsResp response = ProtoMapping.toProto(answer.values.get(0));
      assertThat(METHOD.streamResponse(answer.values.get(0)))
          .as("the front door writes what protobuf-java writes")
          .hasBinaryContent(response.toByteArray());
      assertEveryItemAnswered(request, response);
    }
    assertThat(CORE.health().healthy()).isTrue();
  }

  @FuzzTest(maxDuration = "10s")
  @DictionaryEntries({
    "{\"requests\":[",
    "\"name\":",
    "\"uniqueKey\":",
    "\"unique_key\":",
    "\"hits\":",
    "\"limit\":",
    "\"duration\":",
    "\"algorithm\":",
    "\"behavior\":",
    "\"burst\":",
    "\"metadata\":",
    "\"createdAt\":",
    "\"LEAKY_BUCKET\"",
    "\"GLOBAL\"",
    "\"DURATION_IS_GREGORIAN\"",
    "\"RESET_REMAINING\"",
    "\"9223372036854775807\"",
    "\"-1\""
  })
  void gatewayBody(byte[] body) throws Exception {
    CompletionStage<HttpAnswer> answer =
        GATEWAY.handle(new HttpCall("POST", "/v1/GetRateLimits", body));

    assertThat(answer).isDone();
    HttpAnswer reply = answer.toCompletableFuture().join();
    assertThat(reply.status()).isIn(200, 400);
    if (reply.status() == 400) {
      assertThat(reply.text())
          .matches("(?s)\\{\"code\":(3|11),\"message\":\"[^\"].*\",\"details\":\\[]}");
    } else {
      GetRateLimitsResp.Builder response = GetRateLimitsResp.newBuilder();
      JsonFormat.parser().merge(reply.text(), response);
      assertEveryItemAnswered(accepted(body), response.build());
    }
    assertThat(CORE.health().healthy()).isTrue();
  }

  /** Returns the request the gateway read from {@code body}, which it accepted. */
  private static GetRateLimitsReq accepted(byte[] body) throws InvalidProtocolBufferException {
    String json = new String(body, StandardCharsets.UTF_8);
    GetRateLimitsReq.Builder request = GetRateLimitsReq.newBuilder();
    if (!json.isBlank()) {
      JsonFormat.parser().ignoringUnknownFields().merge(json, request);
    }
    return request.build();
  }

  private static void assertEveryItemAnswered(
      GetRateLimitsReq request, GetRateLimitsResp response) {
    assertThat(response.getResponsesCount()).isEqualTo(request.getRequestsCount());
    for (RateLimitResp item : response.getResponsesList()) {
      if (item.getError().isEmpty()) {
        assertThat(item.getStatus()).isIn(Status.UNDER_LIMIT, Status.OVER_LIMIT);
      }
    }
  }

  /** Records what a handler sends. */
  private static final class Recorded<T> implements StreamObserver<T> {
    final List<T> values = new ArrayList<>();
    Throwable error;
    boolean completed;

    @Override
    public void onNext(T value) {
      values.add(value);
    }

    @Override
    public void onError(Throwable t) {
      error = t;
      completed = true;
    }

    @Override
    public void onCompleted() {
      completed = true;
    }
  }
}
