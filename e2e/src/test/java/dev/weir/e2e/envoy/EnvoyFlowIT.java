package dev.weir.e2e.envoy;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.UInt64Value;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.RateLimitOverride;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import io.envoyproxy.envoy.type.v3.RateLimitUnit;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The front proxy's traffic, without Envoy: three Weir processes (static peers, the shipped {@code
 * envoy-config/front-proxy/ratelimit/} folder) receive exactly the {@code ShouldRateLimit} calls
 * Envoy makes for a scripted sequence of HTTP requests under {@code
 * envoy-config/front-proxy/envoy.yaml}, spread over the three nodes as Envoy's round robin would;
 * every answer is checked: decision, per-descriptor statuses, the {@code x-ratelimit-*} headers
 * Envoy derives from them, and Weir's own {@code RateLimit-*} headers.
 *
 * <p>{@link #SCRIPT} lists each HTTP request next to the route that handles it and the call Envoy
 * makes; {@code EnvoyConfigSchemaTest} checks against the shipped bootstrap that Envoy would make
 * exactly these calls.
 */
class EnvoyFlowIT {
  static final String DOMAIN = "weir-demo";

  /**
   * One scripted HTTP request: the route that serves it, the call Envoy makes (null: none), Weir's
   * answer.
   */
  record Step(String route, HttpRequestSample request, RateLimitRequest sent, Answer answer) {}

  /**
   * Weir's expected answer: overall code, one expectation per descriptor, optional exact
   * x-ratelimit headers.
   */
  record Answer(Code overall, List<Expected> statuses, Map<String, String> xHeaders) {
    Answer withXHeaders(String limit, String remaining) {
      return new Answer(
          overall,
          statuses,
          Map.of("x-ratelimit-limit", limit, "x-ratelimit-remaining", remaining));
    }
  }

  /**
   * Expected status of one descriptor: code, the limit that applied (name, rate, unit) and what
   * remains.
   */
  record Expected(Code code, String name, int requestsPerUnit, Unit unit, int remaining) {}

  private static final String CLIENT_A = "198.51.100.10";
  private static final String CLIENT_BOB = "198.51.100.21";
  private static final String CLIENT_CAROL = "198.51.100.22";
  private static final String CLIENT_DAVE = "198.51.100.23";
  private static final String CLIENT_LOGIN = "198.51.100.30";
  private static final String CLIENT_LOGIN_OTHER = "198.51.100.31";

  static final List<Step> SCRIPT = script();

  private static List<Step> script() {
    List<Step> steps = new ArrayList<>();

    // Route "api" (prefix /api/): (generic_key=api, api_key=<x-api-key>) and
    // (remote_address=<client>).
    HttpRequestSample alice =
        HttpRequestSample.get("/api/orders").header("x-api-key", "k-alice").from(CLIENT_A);
    RateLimitRequest aliceCall =
        call(d("generic_key", "api", "api_key", "k-alice"), d("remote_address", CLIENT_A));
    for (int i = 1; i <= 5; i++) {
      Answer answer =
          ok(
              within("per-api-key", 5, Unit.MINUTE, 5 - i),
              within("per-client", 60, Unit.MINUTE, 60 - i));
      if (i == 1) {
        answer =
            answer.withXHeaders("5, 5;w=60;name=\"per-api-key\", 60;w=60;name=\"per-client\"", "4");
      }
      steps.add(new Step("api", alice, aliceCall, answer));
    }
    steps.add(
        new Step(
            "api",
            alice,
            aliceCall,
            overLimit(
                    over("per-api-key", 5, Unit.MINUTE), within("per-client", 60, Unit.MINUTE, 54))
                .withXHeaders("5, 5;w=60;name=\"per-api-key\", 60;w=60;name=\"per-client\"", "0")));
    // The exact value gold-key has its own, larger limit; the client's address counter keeps
    // counting.
    steps.add(
        new Step(
            "api",
            HttpRequestSample.get("/api/orders").header("x-api-key", "gold-key").from(CLIENT_A),
            call(d("generic_key", "api", "api_key", "gold-key"), d("remote_address", CLIENT_A)),
            ok(
                within("gold-api-key", 100, Unit.MINUTE, 99),
                within("per-client", 60, Unit.MINUTE, 53))));
    // No x-api-key: the API-key descriptor is not sent at all.
    steps.add(
        new Step(
            "api",
            HttpRequestSample.get("/api/orders").from(CLIENT_A),
            call(d("remote_address", CLIENT_A)),
            ok(within("per-client", 60, Unit.MINUTE, 52))));

    // Route "api" with a User-Agent containing "bot": a third descriptor (client_class=bot), one
    // counter for all bots.
    steps.add(
        new Step(
            "api",
            HttpRequestSample.get("/api/items")
                .header("x-api-key", "k-bob")
                .header("user-agent", "ExampleBot/1.0")
                .from(CLIENT_BOB),
            call(
                d("generic_key", "api", "api_key", "k-bob"),
                d("remote_address", CLIENT_BOB),
                d("client_class", "bot")),
            ok(
                within("per-api-key", 5, Unit.MINUTE, 4),
                within("per-client", 60, Unit.MINUTE, 59),
                within("bots", 2, Unit.MINUTE, 1))));
    steps.add(
        new Step(
            "api",
            HttpRequestSample.get("/api/items")
                .header("x-api-key", "k-carol")
                .header("user-agent", "otherbot")
                .from(CLIENT_CAROL),
            call(
                d("generic_key", "api", "api_key", "k-carol"),
                d("remote_address", CLIENT_CAROL),
                d("client_class", "bot")),
            ok(
                within("per-api-key", 5, Unit.MINUTE, 4),
                within("per-client", 60, Unit.MINUTE, 59),
                within("bots", 2, Unit.MINUTE, 0))));
    steps.add(
        new Step(
            "api",
            HttpRequestSample.get("/api/items")
                .header("x-api-key", "k-dave")
                .header("user-agent", "CrawlBOT")
                .from(CLIENT_DAVE),
            call(
                d("generic_key", "api", "api_key", "k-dave"),
                d("remote_address", CLIENT_DAVE),
                d("client_class", "bot")),
            overLimit(
                    within("per-api-key", 5, Unit.MINUTE, 4),
                    within("per-client", 60, Unit.MINUTE, 59),
                    over("bots", 2, Unit.MINUTE))
                .withXHeaders(
                    "2, 5;w=60;name=\"per-api-key\", 60;w=60;name=\"per-client\","
                        + " 2;w=60;name=\"bots\"",
                    "0")));

    // Route "login" (prefix /login): (route=login, remote_address=<client>), 3 per minute per
    // client.
    HttpRequestSample login = HttpRequestSample.get("/login").from(CLIENT_LOGIN);
    RateLimitRequest loginCall = call(d("route", "login", "remote_address", CLIENT_LOGIN));
    for (int i = 1; i <= 3; i++) {
      steps.add(
          new Step(
              "login", login, loginCall, ok(within("login-per-client", 3, Unit.MINUTE, 3 - i))));
    }
    steps.add(
        new Step("login", login, loginCall, overLimit(over("login-per-client", 3, Unit.MINUTE))));
    steps.add(
        new Step(
            "login",
            HttpRequestSample.get("/login").from(CLIENT_LOGIN_OTHER),
            call(d("route", "login", "remote_address", CLIENT_LOGIN_OTHER)),
            ok(within("login-per-client", 3, Unit.MINUTE, 2))));

    // Route "search" (prefix /search, typed_per_filter_config): (route=search,
    // destination_cluster=echo), hits 5.
    HttpRequestSample search = HttpRequestSample.get("/search?q=weir");
    RateLimitRequest searchCall =
        call(
            d("route", "search", "destination_cluster", "echo").toBuilder()
                .setHitsAddend(UInt64Value.of(5))
                .build());
    for (int i = 1; i <= 4; i++) {
      steps.add(
          new Step(
              "search",
              search,
              searchCall,
              ok(within("search-budget", 20, Unit.MINUTE, 20 - 5 * i))));
    }
    steps.add(
        new Step("search", search, searchCall, overLimit(over("search-budget", 20, Unit.MINUTE))));

    // Route "trial" (prefix /trial/): (route=trial, api_key=<x-api-key>) with the limit 2/MINUTE
    // from set_metadata.
    HttpRequestSample trial = HttpRequestSample.get("/trial/start").header("x-api-key", "k-trial");
    RateLimitRequest trialCall =
        call(
            d("route", "trial", "api_key", "k-trial").toBuilder()
                .setLimit(
                    RateLimitOverride.newBuilder()
                        .setRequestsPerUnit(2)
                        .setUnit(RateLimitUnit.MINUTE))
                .build());
    steps.add(new Step("trial", trial, trialCall, ok(within("", 2, Unit.MINUTE, 1))));
    steps.add(new Step("trial", trial, trialCall, ok(within("", 2, Unit.MINUTE, 0))));
    steps.add(new Step("trial", trial, trialCall, overLimit(over("", 2, Unit.MINUTE))));

    // Route "default" (prefix /): no rate_limits, so Envoy calls nobody.
    steps.add(new Step("default", HttpRequestSample.get("/health"), null, null));
    return List.copyOf(steps);
  }

  private static WeirCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster =
        WeirCluster.start(
            3,
            RepoFiles.frontProxyDescriptors(),
            Map.of("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "true"),
            Path.of("target", "envoy-flow-it"));
    RateLimitDescriptor[] probes = new RateLimitDescriptor[9];
    for (int i = 0; i < probes.length; i++) {
      probes[i] = d("remote_address", "probe-" + i);
    }
    cluster.awaitReady(call(probes));
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void shouldRateLimit_frontProxyScriptAcrossThreeNodes_answersAsTheRulesSay() {
    FixedWindows.awaitMarginInCurrentMinute();
    for (int i = 0; i < SCRIPT.size(); i++) {
      Step step = SCRIPT.get(i);
      if (step.sent() == null) {
        continue;
      }
      int node = i % cluster.nodes().size();
      RateLimitResponse response = cluster.rls(node).shouldRateLimit(step.sent());
      String where =
          "step "
              + i
              + " (route "
              + step.route()
              + ", "
              + step.request()
              + ") on weir-"
              + (node + 1);
      assertAnswer(where, step.answer(), response);
    }
  }

  private static void assertAnswer(String where, Answer expected, RateLimitResponse response) {
    assertThat(response.getOverallCode())
        .as(where + ": overall_code")
        .isEqualTo(expected.overall());
    assertThat(response.getStatusesCount())
        .as(where + ": statuses")
        .isEqualTo(expected.statuses().size());
    for (int s = 0; s < expected.statuses().size(); s++) {
      Expected want = expected.statuses().get(s);
      DescriptorStatus got = response.getStatuses(s);
      String at = where + ": status " + s;
      assertThat(got.getCode()).as(at + " code").isEqualTo(want.code());
      assertThat(got.getCurrentLimit().getName())
          .as(at + " current_limit.name")
          .isEqualTo(want.name());
      assertThat(got.getCurrentLimit().getRequestsPerUnit())
          .as(at + " current_limit.requests_per_unit")
          .isEqualTo(want.requestsPerUnit());
      assertThat(got.getCurrentLimit().getUnit())
          .as(at + " current_limit.unit")
          .isEqualTo(want.unit());
      assertThat(got.getLimitRemaining()).as(at + " limit_remaining").isEqualTo(want.remaining());
      long window = XRateLimitHeaders.windowSeconds(want.unit());
      assertThat(got.getDurationUntilReset().getNanos())
          .as(at + " duration_until_reset.nanos (whole seconds)")
          .isZero();
      assertThat(got.getDurationUntilReset().getSeconds())
          .as(at + " duration_until_reset.seconds (rounded up)")
          .isBetween(1L, window);
    }
    Map<String, String> xHeaders = XRateLimitHeaders.of(response);
    expected
        .xHeaders()
        .forEach(
            (name, value) ->
                assertThat(xHeaders.get(name)).as(where + ": Envoy's " + name).isEqualTo(value));
    assertRateLimitHeaders(where, expected, response);
  }

  /**
   * Weir's RateLimit-* headers come from the status with the least remaining; an over-limit one
   * wins.
   */
  private static void assertRateLimitHeaders(
      String where, Answer expected, RateLimitResponse response) {
    Expected tightest =
        expected.statuses().stream()
            .filter(status -> status.code() == Code.OVER_LIMIT)
            .findFirst()
            .orElseGet(
                () ->
                    expected.statuses().stream()
                        .reduce((a, b) -> b.remaining() < a.remaining() ? b : a)
                        .orElseThrow());
    Map<String, String> headers = new LinkedHashMap<>();
    for (HeaderValue header : response.getResponseHeadersToAddList()) {
      headers.put(header.getKey().toLowerCase(Locale.ROOT), header.getValue());
    }
    assertThat(headers)
        .as(where + ": response_headers_to_add")
        .containsKeys("ratelimit-limit", "ratelimit-remaining", "ratelimit-reset");
    assertThat(headers.get("ratelimit-limit"))
        .as(where + ": RateLimit-Limit")
        .isEqualTo(Integer.toString(tightest.requestsPerUnit()));
    assertThat(headers.get("ratelimit-remaining"))
        .as(where + ": RateLimit-Remaining")
        .isEqualTo(Integer.toString(tightest.remaining()));
    assertThat(Long.parseLong(headers.get("ratelimit-reset")))
        .as(where + ": RateLimit-Reset")
        .isBetween(1L, XRateLimitHeaders.windowSeconds(tightest.unit()));
  }

  static RateLimitRequest call(RateLimitDescriptor... descriptors) {
    return RateLimitRequest.newBuilder()
        .setDomain(DOMAIN)
        .addAllDescriptors(Arrays.asList(descriptors))
        .setHitsAddend(0)
        .build();
  }

  static RateLimitDescriptor d(String... keysAndValues) {
    RateLimitDescriptor.Builder descriptor = RateLimitDescriptor.newBuilder();
    for (int i = 0; i < keysAndValues.length; i += 2) {
      descriptor.addEntriesBuilder().setKey(keysAndValues[i]).setValue(keysAndValues[i + 1]);
    }
    return descriptor.build();
  }

  private static Answer ok(Expected... statuses) {
    return new Answer(Code.OK, List.of(statuses), Map.of());
  }

  private static Answer overLimit(Expected... statuses) {
    return new Answer(Code.OVER_LIMIT, List.of(statuses), Map.of());
  }

  private static Expected within(String name, int requestsPerUnit, Unit unit, int remaining) {
    return new Expected(Code.OK, name, requestsPerUnit, unit, remaining);
  }

  private static Expected over(String name, int requestsPerUnit, Unit unit) {
    return new Expected(Code.OVER_LIMIT, name, requestsPerUnit, unit, 0);
  }
}
