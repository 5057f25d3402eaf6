package dev.weir.envoy.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.service.ShouldRateLimitHandler;
import dev.weir.envoy.testkit.RateLimitFieldsSyntax;
import dev.weir.http.HttpListener;
import dev.weir.http.HttpRoute;
import dev.weir.http.HttpSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class JsonHandlerTest {

  /** Admits the first hit of every request and refuses every later one. */
  private static final class FirstHitOnly implements RateLimitService {
    private int calls;

    @Override
    public synchronized CompletableFuture<List<RateLimitResponse>> decide(
        List<RateLimitRequest> requests) {
      List<RateLimitResponse> out = new ArrayList<>();
      for (RateLimitRequest r : requests) {
        boolean over = calls++ > 0;
        out.add(
            RateLimitResponse.of(
                over ? Status.OVER_LIMIT : Status.UNDER_LIMIT,
                r.limit(),
                over ? 0 : 0,
                r.createdAt() + 1000));
      }
      return CompletableFuture.completedFuture(out);
    }
  }

  private static final int MAX_BODY_BYTES = 4096;

  private final ConfigHolder config = new ConfigHolder();
  private HttpListener server;
  private final HttpClient client = HttpClient.newHttpClient();

  @BeforeEach
  void start() throws Exception {
    start(EnvoySettings.DEFAULTS);
  }

  private void start(EnvoySettings settings) throws Exception {
    ShouldRateLimitHandler handler =
        new ShouldRateLimitHandler(
            config,
            new FirstHitOnly(),
            new FakeClock(),
            settings,
            new EnvoyMetrics(new SimpleMeterRegistry()));
    server =
        HttpListener.builder(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .routes(List.of(HttpRoute.post("/json", new JsonHandler(handler))))
            .settings(HttpSettings.defaults().withMaxBodyBytes(MAX_BODY_BYTES))
            .start();
  }

  @AfterEach
  void stop() {
    server.stop(Duration.ZERO);
  }

  private void loadConfig() throws Exception {
    config.set(
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(
                List.of(
                    new ConfigFile(
                        "c.yaml",
                        "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second,"
                            + " requests_per_unit: 1}\n"))));
  }

  private HttpResponse<String> post(String body) throws Exception {
    return client.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/json"))
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static final String REQUEST =
      "{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"key\":\"k\",\"value\":\"v\"}]}],"
          + "\"unknown_field\":1}";

  @Test
  void post_withinLimit_200WithProtojsonResponse() throws Exception {
    loadConfig();

    HttpResponse<String> response = post(REQUEST);

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("Content-Type")).hasValue("application/json");
    assertThat(response.body())
        .isEqualTo(
            "{\"overallCode\":\"OK\",\"statuses\":[{\"code\":\"OK\",\"currentLimit\":"
                + "{\"requestsPerUnit\":1,\"unit\":\"SECOND\"},\"durationUntilReset\":\"1s\"}]}");
  }

  @Test
  void post_overLimit_429() throws Exception {
    loadConfig();
    post(REQUEST);

    HttpResponse<String> response = post(REQUEST);

    assertThat(response.statusCode()).isEqualTo(429);
    assertThat(response.body()).startsWith("{\"overallCode\":\"OVER_LIMIT\"");
  }

  @Test
  void post_ietfHeaders_sentAsHttpHeadersOn200And429() throws Exception {
    server.stop(Duration.ZERO);
    start(
        EnvoySettings.fromEnvironment(
            Map.of(
                "WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "true",
                "WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_FORMAT", "ietf")));
    loadConfig();

    HttpResponse<String> ok = post(REQUEST);
    HttpResponse<String> over = post(REQUEST);

    assertThat(ok.statusCode()).isEqualTo(200);
    assertThat(over.statusCode()).isEqualTo(429);
    for (HttpResponse<String> response : List.of(ok, over)) {
      assertThat(response.headers().allValues("RateLimit-Policy")).hasSize(1);
      assertThat(
              RateLimitFieldsSyntax.policy(response.headers().firstValue("RateLimit-Policy").get()))
          .extracting(Object::toString)
          .containsExactly("k;q=1;w=1");
    }
    assertThat(RateLimitFieldsSyntax.limit(ok.headers().firstValue("RateLimit").orElseThrow()))
        .extracting(Object::toString)
        .containsExactly("k;r=0;t=1");
    assertThat(RateLimitFieldsSyntax.limit(over.headers().firstValue("RateLimit").orElseThrow()))
        .extracting(Object::toString)
        .containsExactly("k;r=0;t=1");
  }

  @Test
  void post_headersDisabled_noRateLimitHttpHeaders() throws Exception {
    loadConfig();

    HttpResponse<String> response = post(REQUEST);

    assertThat(response.headers().map().keySet())
        .noneMatch(name -> name.toLowerCase(java.util.Locale.ROOT).startsWith("ratelimit"));
  }

  @Test
  void post_malformedBody_400WithMessage() throws Exception {
    loadConfig();

    HttpResponse<String> response = post("{\"domain\": ");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body()).startsWith("{\"code\":3,\"message\":\"invalid request body: ");
  }

  @Test
  void post_syntaxError_saysWhereWithoutJavaExceptionNamesOrGsonLinks() throws Exception {
    loadConfig();

    HttpResponse<String> response = post("{\"domain\": \"edge\", \"descriptors\": [{,}]}");
    HttpResponse<String> trailingComma =
        post("{\"domain\": \"edge\", \"descriptors\": [{\"entries\":[],}]}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":3,\"message\":\"invalid request body: malformed JSON: not standard JSON"
                + " (RFC 8259) at line 1 column 38 path $.descriptors[0].\"}");
    assertThat(trailingComma.statusCode()).isEqualTo(400);
    assertThat(trailingComma.body())
        .isEqualTo(
            "{\"code\":3,\"message\":\"invalid request body: malformed JSON: Expected name at"
                + " line 1 column 51 path $.descriptors[0].entries\"}");
  }

  @Test
  void post_jsonOnlyALenientReaderTakes_400Malformed() throws Exception {
    loadConfig();

    HttpResponse<String> response = post("{'domain':'edge',descriptors:[]}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":3,\"message\":\"invalid request body: malformed JSON: not standard JSON"
                + " (RFC 8259) at line 1 column 3 path $.\"}");
  }

  @Test
  void post_fieldSetTwice_400InsteadOfTheLastOneWinning() throws Exception {
    loadConfig();

    HttpResponse<String> response =
        post(
            "{\"domain\":\"edge\",\"descriptors\":[{\"entries\":[{\"key\":\"a\","
                + "\"value\":\"b\"}]}],\"domain\":\"other\"}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":3,\"message\":\"invalid request body: field 'domain' is set twice; it must"
                + " be set at most once in its object\"}");
  }

  @Test
  void post_numberTooLongToReadInBoundedTime_400BeforeParsing() throws Exception {
    loadConfig();
    String addend = "1".repeat(dev.weir.http.LongNumbers.MAX_CHARS + 1);

    HttpResponse<String> response = post("{\"domain\":\"d\",\"hitsAddend\":" + addend + "}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":3,\"message\":\"invalid request body: the number at $.hitsAddend has"
                + " 1001 characters; numbers have at most 1000\"}");
  }

  @Test
  void post_descriptorValueWithAnUnpairedSurrogate_400NamingTheEntry() throws Exception {
    loadConfig();

    HttpResponse<String> response =
        post(
            "{\"domain\":\"shop\",\"descriptors\":[{\"entries\":[{\"key\":\"remote_address\","
                + "\"value\":\"1\"}]},{\"entries\":[{\"key\":\"remote_address\","
                + "\"value\":\"x\\ud800\"}]}]}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":3,\"message\":"
                + dev.weir.http.HttpAnswer.jsonString(
                    "invalid request body: field 'descriptors[1].entries[0].value' is"
                        + " \"x\\ud800\"; it must be valid UTF-16 text, each surrogate escape"
                        + " paired (\\uD800-\\uDBFF directly followed by \\uDC00-\\uDFFF): the"
                        + " \\ud800 at index 1 is unpaired")
                + "}");
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          {"domain":["d"]} | field 'domain' is ["d"]; it must be a string
          {"domain":"d","descriptors":[{"entries":[{"key":"k","value":5}]}]} | field 'descriptors[0].entries[0].value' is 5; it must be a string
          {"domain":"d","descriptors":[{"entries":[{"key":["k","j"]}]}]} | field 'descriptors[0].entries[0].key' is ["k","j"]; it must be a string
          {"domain":"d","descriptors":[{"entries":{"key":"k"}}]} | field 'descriptors[0].entries' is {"key":"k"}; it must be an array whose elements are each an object (a envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry)
          {"domain":"d","hitsAddend":true} | field 'hitsAddend' is true; it must be a uint32: a whole number from 0 to 4294967295, or one written as a string
          {"domain":"d","hitsAddend":4294967296} | field 'hitsAddend' is 4294967296; it must be a uint32: a whole number from 0 to 4294967295, or one written as a string
          {"domain":"d","hitsAddend":"-1"} | field 'hitsAddend' is "-1"; it must be a uint32: a whole number from 0 to 4294967295, or one written as a string
          {"domain":"d","descriptors":[{"hits_addend":"x"}]} | field 'descriptors[0].hits_addend' is "x"; it must be a uint64: a whole number from 0 to 18446744073709551615, or one written as a string
          """)
  void post_valueOfTheWrongJsonType_400NamingFieldValueAndType(String body, String message)
      throws Exception {
    loadConfig();

    HttpResponse<String> response = post(body);

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":3,\"message\":"
                + dev.weir.http.HttpAnswer.jsonString("invalid request body: " + message)
                + "}");
  }

  @ParameterizedTest(name = "{0}")
  @org.junit.jupiter.params.provider.ValueSource(strings = {"hour", "WEEK", "HOUR "})
  void post_overrideUnitNamedNoUnit_400NamingFieldValueAndUnits(String unit) throws Exception {
    loadConfig();

    HttpResponse<String> response =
        post(
            "{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"key\":\"k\",\"value\":\"v\"}],"
                + "\"limit\":{\"requestsPerUnit\":100,\"unit\":\""
                + unit
                + "\"}}]}");

    assertThat(response.statusCode()).as(response.body()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":3,\"message\":"
                + dev.weir.http.HttpAnswer.jsonString(
                    "invalid request body: field 'descriptors[0].limit.unit' has no value named '"
                        + unit
                        + "'; envoy.type.v3.RateLimitUnit allows one of SECOND (1), MINUTE (2),"
                        + " HOUR (3), DAY (4), MONTH (5), YEAR (6), by name or number")
                + "}");
  }

  @Test
  void post_overrideUnitByNumber_decided() throws Exception {
    loadConfig();

    HttpResponse<String> response =
        post(
            "{\"domain\":\"d\",\"descriptors\":[{\"entries\":[{\"key\":\"k\",\"value\":\"v\"}],"
                + "\"limit\":{\"requestsPerUnit\":100,\"unit\":3.0},\"unknown\":\"x\"}]}");

    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    assertThat(response.body()).contains("\"unit\":\"HOUR\"");
  }

  @Test
  void post_numbersAsStringsAndNullForDefaults_accepted() throws Exception {
    loadConfig();

    HttpResponse<String> strings =
        post(
            "{\"domain\":\"d\",\"hitsAddend\":\"1\",\"descriptors\":[{\"entries\":"
                + "[{\"key\":\"k\",\"value\":\"v1\"}],\"hitsAddend\":\"1\"}]}");
    HttpResponse<String> nulls =
        post(
            "{\"domain\":\"d\",\"hitsAddend\":null,\"descriptors\":[{\"entries\":"
                + "[{\"key\":\"k\",\"value\":\"v2\"}],\"hits_addend\":null,\"limit\":null}]}");

    // Decided, not refused: the service here admits only the first hit.
    assertThat(strings.statusCode()).as(strings.body()).isEqualTo(200);
    assertThat(nulls.statusCode()).as(nulls.body()).isEqualTo(429);
  }

  @Test
  void post_descriptorValueShapedLikeAnExponent_decided() throws Exception {
    loadConfig();

    HttpResponse<String> response =
        post(
            "{\"domain\":\"d\",\"descriptors\":[{\"entries\":"
                + "[{\"key\":\"k\",\"value\":\"1E1234\"}]}]}");

    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
  }

  @Test
  void post_emptyDomain_400NamingTheField() throws Exception {
    loadConfig();

    HttpResponse<String> response = post("{\"descriptors\":[{\"entries\":[{\"key\":\"k\"}]}]}");

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body())
        .isEqualTo("{\"code\":3,\"message\":\"rate limit domain must not be empty\"}");
  }

  @Test
  void post_noConfigLoaded_503() throws Exception {
    HttpResponse<String> response = post(REQUEST);

    assertThat(response.statusCode()).isEqualTo(503);
    assertThat(response.body())
        .isEqualTo("{\"code\":14,\"message\":\"no rate limit configuration loaded\"}");
  }

  @Test
  void get_405() throws Exception {
    HttpResponse<String> response =
        client.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/json"))
                .GET()
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).isEqualTo(405);
    assertThat(response.headers().firstValue("Allow")).hasValue("POST");
    assertThat(response.body())
        .isEqualTo("{\"code\":12,\"message\":\"Method Not Allowed\",\"details\":[]}");
  }

  @Test
  void post_bodyOverListenerLimit_413ResourceExhausted() throws Exception {
    loadConfig();

    HttpResponse<String> response = post("{\"domain\":\"" + "d".repeat(MAX_BODY_BYTES) + "\"}");

    assertThat(response.statusCode()).isEqualTo(413);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":8,\"message\":\"request body is larger than the 4096 bytes allowed"
                + " (WEIR_HTTP_MAX_BODY_SIZE)\",\"details\":[]}");
  }
}
