package dev.weir.gubernator.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.util.JsonFormat;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.health.HealthStatus;
import dev.weir.core.health.NodeHealth;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.LocalRateLimitService;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.gubernator.FakeRateLimitService;
import dev.weir.gubernator.NativeCheck;
import dev.weir.http.HttpListener;
import dev.weir.http.HttpRoute;
import dev.weir.http.HttpSettings;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.RateLimitResp;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class GatewayRoutesTest {

  private static final String README_EXAMPLE =
      "{\"requests\":[{\"name\":\"requests_per_sec\",\"uniqueKey\":\"account:12345\","
          + "\"hits\":\"1\",\"limit\":\"10\",\"duration\":\"1000\"}]}";

  private final HttpClient client = HttpClient.newHttpClient();
  private final FakeClock clock = new FakeClock();
  private HttpListener listener;

  private <S extends RateLimitService & NodeHealth> void serve(S service) throws Exception {
    listener =
        listen(new GatewayRoutes(service, service).routes());
  }

  private void serveLocal() throws Exception {
    serve(
        new LocalRateLimitService(
            new LocalLimiter(
                new RateLimitEngine(ZoneOffset.UTC), new InMemoryBucketStore(clock), clock),
            "127.0.0.1:1051"));
  }

  @AfterEach
  void stop() {
    if (listener != null) {
      listener.close();
    }
  }

  private HttpResponse<String> post(String path, String body) throws Exception {
    return client.send(
        HttpRequest.newBuilder(uri(path))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(String path) throws Exception {
    return client.send(
        HttpRequest.newBuilder(uri(path)).GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  private URI uri(String path) {
    return URI.create("http://127.0.0.1:" + listener.port() + path);
  }

  private static String items(int count, String item) {
    StringBuilder json = new StringBuilder("{\"requests\":[");
    for (int i = 0; i < count; i++) {
      json.append(i == 0 ? "" : ",").append(item);
    }
    return json.append("]}").toString();
  }

  /** Starts a listener on a free loopback port serving {@code routes}. */
  private static HttpListener listen(List<HttpRoute> routes) throws IOException {
    return HttpListener.builder(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
        .routes(routes)
        .start();
  }

  @Test
  void getRateLimits_readmeExample_snakeCaseResponse() throws Exception {
    serveLocal();

    HttpResponse<String> response = post("/v1/GetRateLimits", README_EXAMPLE);

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("content-type")).contains("application/json");
    assertThat(response.body())
        .isEqualTo(
            "{\"responses\":[{\"status\":\"UNDER_LIMIT\",\"limit\":\"10\",\"remaining\":\"9\","
                + "\"reset_time\":\""
                + (clock.wallMillis() + 1000)
                + "\",\"error\":\"\",\"metadata\":{}}]}");
  }

  @Test
  void getRateLimits_limitTwo_underUnderOver() throws Exception {
    serveLocal();
    String body =
        "{\"requests\":[{\"name\":\"n\",\"unique_key\":\"k\",\"hits\":1,\"limit\":2,\"duration\":60000}]}";

    assertThat(post("/v1/GetRateLimits", body).body()).contains("\"status\":\"UNDER_LIMIT\"");
    assertThat(post("/v1/GetRateLimits", body).body()).contains("\"status\":\"UNDER_LIMIT\"");
    assertThat(post("/v1/GetRateLimits", body).body()).contains("\"status\":\"OVER_LIMIT\"");
  }

  @Test
  void getRateLimits_1001Items_400OutOfRange() throws Exception {
    serveLocal();

    HttpResponse<String> response =
        post("/v1/GetRateLimits", items(1001, "{\"name\":\"n\",\"unique_key\":\"k\"}"));

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":11,\"message\":\"Requests.RateLimits list too large; max size is '1000'\","
                + "\"details\":[]}");
  }

  @Test
  void getRateLimits_200000Items_400OutOfRangeAs1001CountedOnceAndNotChecked() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    RecordingMetrics metrics = new RecordingMetrics();
    listener =
        listen(
            new GatewayRoutes(
                    new NativeCheck(service, InputLimits.DEFAULTS, new CheckMeter(metrics)),
                    service)
                .routes());

    HttpResponse<String> response = post("/v1/GetRateLimits", items(200_000, "{}"));

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":11,\"message\":\"Requests.RateLimits list too large; max size is '1000'\","
                + "\"details\":[]}");
    assertThat(metrics.events()).containsExactly("refused too_many_items");
    assertThat(service.calls).isEmpty();
  }

  @Test
  void getRateLimits_1001ItemsEachWithAFault_400InvalidArgumentAsGubernatorsGateway()
      throws Exception {
    serve(new FakeRateLimitService());

    HttpResponse<String> wrongType =
        post("/v1/GetRateLimits", items(1001, "{\"hits\":\"many\"}"));
    HttpResponse<String> malformed =
        post("/v1/GetRateLimits", items(1001, "{}").replace("\"requests\"", "requests"));

    assertThat(wrongType.statusCode()).isEqualTo(400);
    assertThat(wrongType.body()).startsWith("{\"code\":3,").contains("requests[0].hits");
    assertThat(malformed.statusCode()).isEqualTo(400);
    assertThat(malformed.body()).startsWith("{\"code\":3,\"message\":\"malformed JSON");
  }

  @Test
  void getRateLimits_emptyUniqueKeyAmongValid_itemErrorOthersAnswered() throws Exception {
    serveLocal();
    String body =
        "{\"requests\":["
            + "{\"name\":\"n\",\"unique_key\":\"a\",\"hits\":1,\"limit\":5,\"duration\":1000},"
            + "{\"name\":\"n\",\"unique_key\":\"\",\"hits\":1,\"limit\":5,\"duration\":1000},"
            + "{\"name\":\"n\",\"unique_key\":\"b\",\"hits\":1,\"limit\":5,\"duration\":1000}]}";

    HttpResponse<String> response = post("/v1/GetRateLimits", body);

    assertThat(response.statusCode()).isEqualTo(200);
    GetRateLimitsResp parsed = parse(response.body());
    assertThat(parsed.getResponsesList())
        .extracting(RateLimitResp::getError)
        .containsExactly("", "field 'unique_key' cannot be empty", "");
    assertThat(parsed.getResponsesList())
        .extracting(RateLimitResp::getRemaining)
        .containsExactly(4L, 0L, 4L);
    assertThat(response.body()).contains("\"reset_time\":\"0\"");
  }

  private static GetRateLimitsResp parse(String json) throws Exception {
    GetRateLimitsResp.Builder builder = GetRateLimitsResp.newBuilder();
    JsonFormat.parser().merge(json, builder);
    return builder.build();
  }

  @Test
  void getRateLimits_malformedJson_400WithParserMessage() throws Exception {
    serve(new FakeRateLimitService());

    HttpResponse<String> response = post("/v1/GetRateLimits", "{\"requests\":[{\"name\":");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .startsWith("{\"code\":3,\"message\":\"")
        .endsWith(",\"details\":[]}");
    assertThat(response.body()).doesNotContain("\"message\":\"\"");
  }

  @Test
  void getRateLimits_numberTooLongToReadInBoundedTime_400BeforeParsing() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    serve(service);
    // protobuf-java reads such a number with BigDecimal: a million digits take about 15 s.
    String hits = "1".repeat(dev.weir.http.LongNumbers.MAX_CHARS + 1);

    HttpResponse<String> response =
        post("/v1/GetRateLimits", "{\"requests\":[{\"hits\":" + hits + "}]}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":3,\"message\":\"the number at $.requests[0].hits has 1001 characters; numbers"
                + " have at most 1000\",\"details\":[]}");
  }

  @Test
  void getRateLimits_keyShapedLikeAnExponent_answered() throws Exception {
    serveLocal();

    HttpResponse<String> response =
        post(
            "/v1/GetRateLimits",
            "{\"requests\":[{\"name\":\"n\",\"unique_key\":\"E1234\",\"hits\":1,\"limit\":5,"
                + "\"duration\":60000}]}");

    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    assertThat(parse(response.body()).getResponses(0).getRemaining()).isEqualTo(4);
  }

  @Test
  void getRateLimits_1001ItemsWithAKeyShapedLikeAnExponent_400OutOfRange() throws Exception {
    serve(new FakeRateLimitService());

    HttpResponse<String> response =
        post("/v1/GetRateLimits", items(1001, "{\"name\":\"n\",\"unique_key\":\"1e99999\"}"));

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body()).startsWith("{\"code\":11,");
  }

  @Test
  void getRateLimits_longNumberInUnicodeDigits_400BeforeParsing() throws Exception {
    serve(new FakeRateLimitService());
    String hits = "1".repeat(dev.weir.http.LongNumbers.MAX_CHARS) + "\u0661";

    HttpResponse<String> response =
        post("/v1/GetRateLimits", "{\"requests\":[{\"hits\":\"" + hits + "\"}]}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body()).contains("the number at $.requests[0].hits has 1001 characters");
  }

  @Test
  void getRateLimits_bodyNotUtf8_servedWithTheMalformedBytesReadAsReplacementCharacters()
      throws Exception {
    serveLocal();
    byte[] latin1 =
        "{\"requests\":[{\"name\":\"n\",\"unique_key\":\"Jos\u00e9\",\"hits\":1,\"limit\":5,\"duration\":60000}]}"
            .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);

    HttpResponse<String> response =
        client.send(
            HttpRequest.newBuilder(uri("/v1/GetRateLimits"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(latin1))
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).as("a refusal would let a fail-open caller through").isEqualTo(200);
    assertThat(parse(response.body()).getResponses(0).getRemaining()).isEqualTo(4);
  }

  @Test
  void getRateLimits_wrongFieldType_400() throws Exception {
    serve(new FakeRateLimitService());

    HttpResponse<String> response =
        post("/v1/GetRateLimits", "{\"requests\":[{\"hits\":\"many\"}]}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body()).contains("\"code\":3").contains("many");
  }

  @Test
  void getRateLimits_bothNameStylesEnumsAndUnknownFields_parsed() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    serve(service);
    String body =
        "{\"requests\":["
            + "{\"name\":\"a\",\"uniqueKey\":\"k1\",\"algorithm\":\"LEAKY_BUCKET\",\"behavior\":34,"
            + "\"createdAt\":\"123\",\"burst\":7,\"future\":true},"
            + "{\"name\":\"b\",\"unique_key\":\"k2\",\"algorithm\":3,\"behavior\":\"GLOBAL\","
            + "\"created_at\":456,\"metadata\":{\"traceparent\":\"t\"}}],\"extra\":1}";

    HttpResponse<String> response = post("/v1/GetRateLimits", body);

    assertThat(response.statusCode()).isEqualTo(200);
    List<RateLimitRequest> items = service.calls.get(0);
    assertThat(items.get(0))
        .isEqualTo(
            RateLimitRequest.builder("a", "k1")
                .hits(0)
                .algorithmNumber(1)
                .behavior(34)
                .createdAt(123)
                .burst(7)
                .build());
    assertThat(items.get(1))
        .isEqualTo(
            RateLimitRequest.builder("b", "k2")
                .hits(0)
                .algorithmNumber(3)
                .behavior(2)
                .createdAt(456)
                .metadata(java.util.Map.of("traceparent", "t"))
                .build());
  }

  @Test
  void getRateLimits_unknownAlgorithmName_400NamingFieldValueAndAllowedNames() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    serve(service);
    String body =
        "{\"requests\":[{\"name\":\"a\",\"unique_key\":\"k\"},"
            + "{\"name\":\"b\",\"unique_key\":\"k\",\"algorithm\":\"LEAKY\"}]}";

    HttpResponse<String> response = post("/v1/GetRateLimits", body);

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":3,\"message\":\"field 'requests[1].algorithm' has no value named 'LEAKY';"
                + " pb.gubernator.Algorithm allows one of TOKEN_BUCKET (0), LEAKY_BUCKET (1),"
                + " FIXED_WINDOW (2), SLIDING_WINDOW (3), by name or number\",\"details\":[]}");
    assertThat(service.calls).isEmpty();
  }

  @Test
  void getRateLimits_behaviorFlagsJoinedByBar_400SayingToSendTheSum() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    serve(service);
    String body =
        "{\"requests\":[{\"name\":\"a\",\"uniqueKey\":\"k\","
            + "\"behavior\":\"GLOBAL|DRAIN_OVER_LIMIT\",\"unknown\":1}]}";

    HttpResponse<String> response = post("/v1/GetRateLimits", body);

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .contains(
            "field 'requests[0].behavior' has no value named 'GLOBAL|DRAIN_OVER_LIMIT';"
                + " pb.gubernator.Behavior allows one of BATCHING (0), NO_BATCHING (1), GLOBAL (2),"
                + " DURATION_IS_GREGORIAN (4), RESET_REMAINING (8), MULTI_REGION (16),"
                + " DRAIN_OVER_LIMIT (32), by name or number; to combine flags, send the sum of"
                + " their numbers, e.g. \\\"behavior\\\":34 for GLOBAL and DRAIN_OVER_LIMIT");
    assertThat(service.calls).isEmpty();
  }

  static Stream<Arguments> enumValuesNeitherANameNorAWholeInt32() {
    String algorithms =
        " pb.gubernator.Algorithm allows one of TOKEN_BUCKET (0), LEAKY_BUCKET (1),"
            + " FIXED_WINDOW (2), SLIDING_WINDOW (3), by name or number";
    String behaviors =
        " pb.gubernator.Behavior allows one of BATCHING (0), NO_BATCHING (1), GLOBAL (2),"
            + " DURATION_IS_GREGORIAN (4), RESET_REMAINING (8), MULTI_REGION (16),"
            + " DRAIN_OVER_LIMIT (32), by name or number; to combine flags, send the sum of"
            + " their numbers, e.g. \\\"behavior\\\":34 for GLOBAL and DRAIN_OVER_LIMIT";
    return Stream.of(
        Arguments.of(
            "\"behavior\":4.5",
            "field 'requests[0].behavior' has no value 4.5, which is not a whole number;"
                + behaviors),
        Arguments.of(
            "\"behavior\":4294967300",
            "field 'requests[0].behavior' has no value 4294967300, which is outside the 32-bit"
                + " range of enum numbers;"
                + behaviors),
        Arguments.of(
            "\"algorithm\":1.5",
            "field 'requests[0].algorithm' has no value 1.5, which is not a whole number;"
                + algorithms),
        Arguments.of(
            "\"algorithm\":1.0000000000000000001",
            "field 'requests[0].algorithm' has no value 1.0000000000000000001, which is not a"
                + " whole number;"
                + algorithms),
        Arguments.of(
            "\"algorithm\":\" 1\"",
            "field 'requests[0].algorithm' has no value named ' 1';" + algorithms));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("enumValuesNeitherANameNorAWholeInt32")
  void getRateLimits_enumValueNeitherANameNorAWholeInt32_400NamingFieldValueAndAllowedValues(
      String field, String message) throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    serve(service);

    HttpResponse<String> response =
        post(
            "/v1/GetRateLimits",
            "{\"requests\":[{\"name\":\"a\",\"unique_key\":\"k\"," + field + "}]}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo("{\"code\":3,\"message\":\"" + message + "\",\"details\":[]}");
    assertThat(service.calls).isEmpty();
  }

  @Test
  void getRateLimits_enumAsWholeNumberInAnyNotation_accepted() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    serve(service);
    String body =
        "{\"requests\":["
            + "{\"name\":\"a\",\"unique_key\":\"k\",\"behavior\":2.0,\"algorithm\":1e0},"
            + "{\"name\":\"b\",\"unique_key\":\"k\",\"behavior\":\"GLOBAL\",\"algorithm\":3},"
            + "{\"name\":\"c\",\"unique_key\":\"k\",\"behavior\":\"34.0\",\"unknown\":true}]}";

    HttpResponse<String> response = post("/v1/GetRateLimits", body);

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(service.calls.get(0))
        .extracting(RateLimitRequest::behavior)
        .containsExactly(2, 2, 34);
    assertThat(service.calls.get(0))
        .extracting(RateLimitRequest::algorithm)
        .containsExactly(1, 3, 0);
  }

  /** Returns {@code field} with a name and a unique_key, unless it sets one of them itself. */
  private static String withNameAndKey(String field) {
    String fields = field;
    if (!field.startsWith("\"name\"")) {
      fields += ",\"name\":\"a\"";
    }
    if (!field.startsWith("\"unique_key\"") && !field.startsWith("\"uniqueKey\"")) {
      fields += ",\"unique_key\":\"k\"";
    }
    return fields;
  }

  static Stream<Arguments> valuesOfTheWrongJsonType() {
    String int64 =
        "an int64: a whole number from -9223372036854775808 to 9223372036854775807, or one"
            + " written as a string";
    String behaviors =
        "a pb.gubernator.Behavior by name (a string) or number: BATCHING (0), NO_BATCHING (1),"
            + " GLOBAL (2), DURATION_IS_GREGORIAN (4), RESET_REMAINING (8), MULTI_REGION (16),"
            + " DRAIN_OVER_LIMIT (32)";
    return Stream.of(
        Arguments.of(
            "\"unique_key\":[\"a\"]",
            "field 'requests[0].unique_key' is [\\\"a\\\"]; it must be a string"),
        Arguments.of(
            "\"unique_key\":[\"a\",\"b\"]",
            "field 'requests[0].unique_key' is [\\\"a\\\",\\\"b\\\"]; it must be a string"),
        Arguments.of(
            "\"uniqueKey\":12345",
            "field 'requests[0].uniqueKey' is 12345; it must be a string"),
        Arguments.of(
            "\"hits\":true", "field 'requests[0].hits' is true; it must be " + int64),
        Arguments.of(
            "\"limit\":\"ten\"",
            "field 'requests[0].limit' is \\\"ten\\\"; it must be " + int64),
        Arguments.of(
            "\"metadata\":{\"traceparent\":1}",
            "field 'requests[0].metadata.traceparent' is 1; it must be a string"),
        Arguments.of(
            "\"behavior\":true", "field 'requests[0].behavior' is true; it must be " + behaviors),
        Arguments.of(
            "\"behavior\":[\"GLOBAL\"]",
            "field 'requests[0].behavior' is [\\\"GLOBAL\\\"]; it must be " + behaviors));
  }

  @Test
  void getRateLimits_uniqueKeyWithAnUnpairedSurrogate_400NamingTheItem() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    serve(service);

    HttpResponse<String> response =
        post(
            "/v1/GetRateLimits",
            "{\"requests\":[{\"name\":\"a\",\"unique_key\":\"k\"},"
                + "{\"name\":\"a\",\"unique_key\":\"\\udfff\"}]}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":3,\"message\":"
                + dev.weir.http.HttpAnswer.jsonString(
                    "field 'requests[1].unique_key' is \"\\udfff\"; it must be valid UTF-16"
                        + " text, each surrogate escape paired (\\uD800-\\uDBFF directly"
                        + " followed by \\uDC00-\\uDFFF): the \\udfff at index 0 is unpaired")
                + ",\"details\":[]}");
    assertThat(service.calls).isEmpty();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("valuesOfTheWrongJsonType")
  void getRateLimits_valueOfTheWrongJsonType_400NamingFieldValueAndType(
      String field, String message) throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    serve(service);

    HttpResponse<String> response =
        post("/v1/GetRateLimits", "{\"requests\":[{" + withNameAndKey(field) + "}]}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo("{\"code\":3,\"message\":\"" + message + "\",\"details\":[]}");
    assertThat(service.calls).isEmpty();
  }

  @Test
  void getRateLimits_requestsNotAnArray_400NamingTheField() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    serve(service);

    HttpResponse<String> response =
        post("/v1/GetRateLimits", "{\"requests\":{\"name\":\"a\",\"unique_key\":\"k\"}}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .contains(
            "field 'requests' is {\\\"name\\\":\\\"a\\\",\\\"unique_key\\\":\\\"k\\\"}; it must be an"
                + " array whose elements are each an object (a pb.gubernator.RateLimitReq)");
    assertThat(service.calls).isEmpty();
  }

  @Test
  void getRateLimits_requestsSetTwice_400InsteadOfAnsweringOnlyTheLastList() throws Exception {
    serveLocal();

    HttpResponse<String> response =
        post(
            "/v1/GetRateLimits",
            "{\"requests\":[{\"name\":\"a\",\"unique_key\":\"k\",\"hits\":1,\"limit\":5}],"
                + "\"requests\":[{\"name\":\"b\",\"unique_key\":\"k\",\"hits\":1,\"limit\":5}]}");

    assertThat(response.statusCode()).as(response.body()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":3,\"message\":\"field 'requests' is set twice; it must be set at most"
                + " once in its object\",\"details\":[]}");
  }

  @Test
  void getRateLimits_int64AsStringOrNumberAndNullForDefaults_accepted() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    serve(service);
    String body =
        "{\"requests\":["
            + "{\"name\":\"a\",\"unique_key\":\"k\",\"hits\":\"5\",\"limit\":10,\"duration\":\"1e3\"},"
            + "{\"name\":\"b\",\"unique_key\":\"k\",\"hits\":null,\"algorithm\":null,"
            + "\"metadata\":null,\"createdAt\":null}]}";

    HttpResponse<String> response = post("/v1/GetRateLimits", body);

    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    assertThat(service.calls.get(0).get(0))
        .isEqualTo(RateLimitRequest.builder("a", "k").hits(5).limit(10).duration(1000).build());
    assertThat(service.calls.get(0).get(1)).isEqualTo(RateLimitRequest.builder("b", "k").hits(0).build());
  }

  @Test
  void getRateLimits_enumAsNameNumberOrNumberString_accepted() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    serve(service);
    String body =
        "{\"requests\":["
            + "{\"name\":\"a\",\"unique_key\":\"k\",\"behavior\":\"DRAIN_OVER_LIMIT\"},"
            + "{\"name\":\"b\",\"unique_key\":\"k\",\"behavior\":34},"
            + "{\"name\":\"c\",\"unique_key\":\"k\",\"behavior\":\"34\",\"algorithm\":\"1\","
            + "\"unknown\":{\"algorithm\":\"NOT_CHECKED\"}}]}";

    HttpResponse<String> response = post("/v1/GetRateLimits", body);

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(service.calls.get(0))
        .extracting(RateLimitRequest::behavior)
        .containsExactly(32, 34, 34);
    assertThat(service.calls.get(0).get(2).algorithm()).isEqualTo(1);
  }

  @Test
  void getRateLimits_undeclaredAlgorithmNumber_parsedAndAnsweredWithTheItemsError()
      throws Exception {
    serveLocal();
    String body =
        "{\"requests\":[{\"name\":\"a\",\"unique_key\":\"k\",\"hits\":1,\"limit\":5,"
            + "\"duration\":1000,\"algorithm\":7}]}";

    HttpResponse<String> response = post("/v1/GetRateLimits", body);

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body())
        .contains("\"error\":\"Invalid rate limit algorithm \\u00277\\u0027\"");
  }

  @Test
  void getRateLimits_emptyBody_emptyResponses() throws Exception {
    serve(new FakeRateLimitService());

    HttpResponse<String> response = post("/v1/GetRateLimits", "");

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body()).isEqualTo("{\"responses\":[]}");
  }

  @Test
  void getRateLimits_bodyOverCap_413() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    serve(service);
    String body =
        "{\"requests\":[],\"pad\":\""
            + "x".repeat(HttpSettings.defaults().maxBodyBytes())
            + "\"}";

    HttpResponse<String> response = post("/v1/GetRateLimits", body);

    assertThat(response.statusCode()).isEqualTo(413);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":8,\"message\":\"request body is larger than the 4194304 bytes allowed"
                + " (WEIR_HTTP_MAX_BODY_SIZE)\",\"details\":[]}");
    assertThat(service.calls).isEmpty();
  }

  @Test
  void getRateLimits_wrongMethod_405() throws Exception {
    serve(new FakeRateLimitService());

    HttpResponse<String> response = get("/v1/GetRateLimits");

    assertThat(response.statusCode()).isEqualTo(405);
    assertThat(response.headers().firstValue("allow")).contains("POST");
    assertThat(response.body()).contains("\"code\":12");
  }

  @Test
  void unknownPath_404() throws Exception {
    serve(new FakeRateLimitService());

    assertThat(get("/v1/Nope").statusCode()).isEqualTo(404);
  }

  @Test
  void getRateLimits_unexpectedFailure_500Internal() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    service.answer = items -> CompletableFuture.failedFuture(new IllegalStateException("kaput"));
    serve(service);

    HttpResponse<String> response = post("/v1/GetRateLimits", README_EXAMPLE);

    assertThat(response.statusCode()).isEqualTo(500);
    assertThat(response.body()).contains("\"code\":13").contains("kaput");
  }

  @Test
  void healthCheck_healthy_200SnakeCase() throws Exception {
    serveLocal();

    HttpResponse<String> response = get("/v1/HealthCheck");

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body())
        .isEqualTo(
            "{\"status\":\"healthy\",\"message\":\"\",\"peer_count\":1,"
                + "\"advertise_address\":\"127.0.0.1:1051\","
                + "\"local_peers\":[{\"grpc_address\":\"127.0.0.1:1051\",\"data_center\":\"\"}],"
                + "\"region_peers\":[]}");
  }

  @Test
  void healthCheck_unhealthy_503WithMessage() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    service.health =
        new HealthStatus(false, "peer b:1 unreachable", 2, "a:1", List.of("a:1", "b:1"));
    serve(service);

    HttpResponse<String> response = get("/v1/HealthCheck");

    assertThat(response.statusCode()).isEqualTo(503);
    assertThat(response.body())
        .isEqualTo("{\"code\":14,\"message\":\"peer b:1 unreachable\",\"details\":[]}");
  }

  @Test
  void healthRoutes_mounted_probesAnsweredAndRateLimitApiNotFound() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    listener =
        listen(new GatewayRoutes(service, service).healthRoutes());

    assertThat(get("/v1/HealthCheck").statusCode()).isEqualTo(200);
    assertThat(get("/v1/HealthCheck").body()).contains("\"status\":\"healthy\"");
    assertThat(get("/v1/LiveCheck").statusCode()).isEqualTo(200);
    assertThat(post("/v1/GetRateLimits", README_EXAMPLE).statusCode()).isEqualTo(404);
    assertThat(service.calls).isEmpty();
  }

  @Test
  void routes_listenerSaturated_probesServedAndGetRateLimits503() throws Exception {
    FakeRateLimitService service = new FakeRateLimitService();
    service.health = new HealthStatus(false, "peer b:1 unreachable", 1, "a:1", List.of("a:1"));
    CountDownLatch entered = new CountDownLatch(1);
    CompletableFuture<List<RateLimitResponse>> pending = new CompletableFuture<>();
    service.answer =
        requests -> {
          entered.countDown();
          return pending;
        };
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    MicrometerMetrics metrics = new MicrometerMetrics(registry);
    listener =
        HttpListener.builder(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .routes(new GatewayRoutes(service, service).routes())
            .settings(HttpSettings.defaults().withThreads(1).withMaxInFlight(2))
            .metrics(metrics, clock)
            .start();
    CompletableFuture<HttpResponse<String>> working = postAsync(README_EXAMPLE);
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    CompletableFuture<HttpResponse<String>> waiting = postAsync(README_EXAMPLE);
    Await.until(
        Duration.ofSeconds(10),
        () -> registry.get(MicrometerMetrics.HTTP_IN_FLIGHT).gauge().value() == 2.0,
        "the second request is in flight too");

    HttpResponse<String> live = get("/v1/LiveCheck");
    HttpResponse<String> health = get("/v1/HealthCheck");
    HttpResponse<String> refused = post("/v1/GetRateLimits", README_EXAMPLE);

    assertThat(live.statusCode()).isEqualTo(200);
    assertThat(live.body()).isEqualTo("{}");
    assertThat(health.statusCode()).isEqualTo(503);
    assertThat(health.body())
        .isEqualTo("{\"code\":14,\"message\":\"peer b:1 unreachable\",\"details\":[]}");
    assertThat(refused.statusCode()).isEqualTo(503);
    assertThat(refused.body()).contains("HTTP listener saturated");
    assertThat(
            registry
                .get(MicrometerMetrics.REQUESTS_REFUSED)
                .tag("reason", RefusalReason.HTTP_SATURATED.label())
                .counter()
                .count())
        .isEqualTo(1.0);
    service.health = new HealthStatus(true, "", 1, "a:1", List.of("a:1"));
    assertThat(get("/v1/HealthCheck").statusCode()).isEqualTo(200);
    pending.complete(
        List.of(new RateLimitResponse(Status.UNDER_LIMIT, 10, 9, 0, "", Map.of())));
    assertThat(working.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(waiting.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
  }

  @Test
  void routes_healthRoutesPlusGetRateLimits() {
    GatewayRoutes gateway = new GatewayRoutes(new FakeRateLimitService(), new FakeRateLimitService());

    assertThat(gateway.routes())
        .extracting(r -> r.method() + " " + r.path() + " " + r.servedWhenSaturated())
        .containsExactly(
            "POST /v1/GetRateLimits false",
            "GET /v1/HealthCheck true",
            "GET /v1/LiveCheck true");
  }

  private CompletableFuture<HttpResponse<String>> postAsync(String body) {
    return client.sendAsync(
        HttpRequest.newBuilder(uri("/v1/GetRateLimits"))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void liveCheck_running_200EmptyObject() throws Exception {
    serve(new FakeRateLimitService());

    HttpResponse<String> response = get("/v1/LiveCheck");

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body()).isEqualTo("{}");
  }

  @Test
  void grpcHttpStatus_gatewayTable() {
    assertThat(GrpcHttpStatus.of(io.grpc.Status.Code.OUT_OF_RANGE)).isEqualTo(400);
    assertThat(GrpcHttpStatus.of(io.grpc.Status.Code.INVALID_ARGUMENT)).isEqualTo(400);
    assertThat(GrpcHttpStatus.of(io.grpc.Status.Code.UNAVAILABLE)).isEqualTo(503);
    assertThat(GrpcHttpStatus.of(io.grpc.Status.Code.INTERNAL)).isEqualTo(500);
    assertThat(GrpcHttpStatus.of(io.grpc.Status.Code.NOT_FOUND)).isEqualTo(404);
    assertThat(GrpcHttpStatus.of(io.grpc.Status.Code.DEADLINE_EXCEEDED)).isEqualTo(504);
  }
}
