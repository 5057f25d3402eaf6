package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.Units;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.service.StatsKeys;
import io.envoyproxy.envoy.type.v3.RateLimitUnit;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code GET /v1/Status}, {@code POST /v1/Explain} and the status page's assets on a real node. */
class StatusPageRoutesTest {

  private static final String YAML =
      """
      domain: shop
      descriptors:
        - key: remote_address
          rate_limit: {unit: minute, requests_per_unit: 2, name: per-ip}
        - key: client
          detailed_metric: true
          rate_limit: {unit: minute, requests_per_unit: 600}
      """;

  @TempDir Path dir;
  private final FakeClock clock = new FakeClock();
  private final HttpClient http = HttpClient.newHttpClient();
  private WeirNode node;

  @AfterEach
  void stop() {
    if (node != null) {
      node.close();
    }
  }

  private void startNode(boolean envoy) throws Exception {
    startNode(envoy ? YAML : null);
  }

  /** Starts the node serving Envoy with the descriptor config {@code yaml}, or not when null. */
  private void startNode(String yaml) throws Exception {
    WeirNode.Builder builder =
        WeirNode.builder(TestConfigs.loopback()).clock(clock).store(new InMemoryBucketStore(clock));
    if (yaml != null) {
      Path config = Files.writeString(dir.resolve("shop.yaml"), yaml);
      builder.envoy(EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_CONFIG", config.toString())));
    }
    node = builder.start();
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(uri(path)).GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> post(String path, String body) throws Exception {
    return http.send(
        HttpRequest.newBuilder(uri(path)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private URI uri(String path) {
    return URI.create("http://127.0.0.1:" + node.httpPort() + path);
  }

  private void hit(String key, String value) throws Exception {
    String body =
        "{\"domain\":\"shop\",\"descriptors\":[{\"entries\":[{\"key\":\""
            + key
            + "\",\"value\":\""
            + value
            + "\"}]}]}";
    assertThat(post("/json", body).statusCode()).isIn(200, 429);
  }

  @Test
  void status_membersShareAndRuleCounts_withoutRequestValues() throws Exception {
    startNode(true);
    for (int i = 0; i < 3; i++) {
      hit("remote_address", "10.9.9.9");
    }
    hit("client", "secret-client-value");

    HttpResponse<String> answer = get("/v1/Status");

    assertThat(answer.statusCode()).isEqualTo(200);
    JsonObject status = JsonParser.parseString(answer.body()).getAsJsonObject();
    String self = node.advertiseAddress().toString();
    assertThat(status.get("self").getAsString()).isEqualTo(self);
    assertThat(status.get("ready").getAsBoolean()).isTrue();
    JsonArray members = status.getAsJsonArray("members");
    assertThat(members).hasSize(1);
    JsonObject member = members.get(0).getAsJsonObject();
    assertThat(member.get("address").getAsString()).isEqualTo(self);
    assertThat(member.get("self").getAsBoolean()).isTrue();
    assertThat(member.get("reachable").getAsBoolean()).isTrue();
    assertThat(member.get("ring_share").getAsDouble()).isEqualTo(1.0);
    JsonObject envoy = status.getAsJsonObject("envoy");
    assertThat(envoy.get("enabled").getAsBoolean()).isTrue();
    JsonObject shop = envoy.getAsJsonArray("domains").get(0).getAsJsonObject();
    assertThat(shop.get("domain").getAsString()).isEqualTo("shop");
    assertThat(shop.get("total_hits").getAsLong()).isEqualTo(4);
    assertThat(shop.get("over_limit").getAsLong()).isEqualTo(1);
    JsonArray rules = shop.getAsJsonArray("rules");
    assertThat(rules).hasSize(2);
    JsonObject perIp = rules.get(0).getAsJsonObject();
    assertThat(perIp.get("rule").getAsString()).isEqualTo("remote_address");
    assertThat(perIp.get("limit").getAsString()).startsWith("2 per minute");
    assertThat(perIp.get("total_hits").getAsLong()).isEqualTo(3);
    assertThat(perIp.get("over_limit").getAsLong()).isEqualTo(1);
    JsonObject client = rules.get(1).getAsJsonObject();
    assertThat(client.get("counted_per_value").getAsBoolean()).isTrue();
    assertThat(client.has("total_hits")).isFalse();
    assertThat(answer.body()).doesNotContain("10.9.9.9").doesNotContain("secret-client-value");
  }

  @Test
  void status_aRuleFirstHitAfterTheDomainsValueLabelsAreTaken_showsItsOwnHits() throws Exception {
    startNode(true);
    int values = EnvoyMetrics.MAX_RULES_PER_DOMAIN;
    for (int first = 0; first < values; first += 1000) {
      StringBuilder body = new StringBuilder("{\"domain\":\"shop\",\"descriptors\":[");
      for (int i = first; i < first + 1000; i++) {
        body.append(i == first ? "" : ",")
            .append("{\"entries\":[{\"key\":\"client\",\"value\":\"c")
            .append(i)
            .append("\"}]}");
      }
      HttpResponse<String> answer = post("/json", body.append("]}").toString());
      assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
    }
    for (int i = 0; i < 3; i++) {
      hit("remote_address", "10.9.9.9");
    }

    JsonObject shop = firstStatusDomain();

    JsonObject perIp = shop.getAsJsonArray("rules").get(0).getAsJsonObject();
    assertThat(perIp.get("rule").getAsString()).isEqualTo("remote_address");
    assertThat(perIp.get("total_hits").getAsLong()).isEqualTo(3);
    assertThat(perIp.get("over_limit").getAsLong()).isEqualTo(1);
    assertThat(shop.get("total_hits").getAsLong()).isEqualTo(values + 3);
  }

  @Test
  void status_detailedShareThresholdWildcard_labelledByItsPattern_showsItsOwnHits()
      throws Exception {
    startNode(
        """
        domain: shop
        descriptors:
          - key: user
            value: "premium*"
            share_threshold: true
            detailed_metric: true
            rate_limit: {unit: minute, requests_per_unit: 1}
        """);
    hit("user", "premium-alice");
    hit("user", "premium-alice");

    JsonObject rule = firstStatusDomain().getAsJsonArray("rules").get(0).getAsJsonObject();

    assertThat(rule.get("rule").getAsString()).isEqualTo("user_premium*");
    assertThat(rule.get("counted_per_value").getAsBoolean()).isFalse();
    assertThat(rule.has("total_hits")).as(rule.toString()).isTrue();
    assertThat(rule.get("total_hits").getAsLong()).isEqualTo(2);
    assertThat(rule.get("over_limit").getAsLong()).isEqualTo(1);
  }

  @Test
  void status_exactChildOfASharedValueToMetricWildcard_showsItsOwnHits_keyOnlyChildPerValue()
      throws Exception {
    startNode(
        """
        domain: shop
        descriptors:
          - key: tier
            value: "premium*"
            share_threshold: true
            value_to_metric: true
            descriptors:
              - key: plan
                value: gold
                rate_limit: {unit: minute, requests_per_unit: 1}
              - key: user
                value_to_metric: true
                rate_limit: {unit: minute, requests_per_unit: 5}
        """);
    String gold =
        "{\"domain\":\"shop\",\"descriptors\":[{\"entries\":[{\"key\":\"tier\",\"value\":"
            + "\"premium-eu\"},{\"key\":\"plan\",\"value\":\"gold\"}]}]}";
    assertThat(post("/json", gold).statusCode()).isEqualTo(200);
    assertThat(post("/json", gold).statusCode()).isEqualTo(429);

    JsonArray rules = firstStatusDomain().getAsJsonArray("rules");

    JsonObject plan = rules.get(0).getAsJsonObject();
    assertThat(plan.get("rule").getAsString()).isEqualTo("tier_premium*.plan_gold");
    assertThat(plan.get("counted_per_value").getAsBoolean()).isFalse();
    assertThat(plan.has("total_hits")).as(plan.toString()).isTrue();
    assertThat(plan.get("total_hits").getAsLong()).isEqualTo(2);
    assertThat(plan.get("over_limit").getAsLong()).isEqualTo(1);
    JsonObject user = rules.get(1).getAsJsonObject();
    assertThat(user.get("rule").getAsString()).isEqualTo("tier_premium*.user");
    assertThat(user.get("counted_per_value").getAsBoolean()).isTrue();
  }

  @Test
  void status_ruleWhosePathIsLongerThanTheLongestRuleLabel_showsItsOwnHits() throws Exception {
    String key = "k".repeat(300);
    String value = "v".repeat(300);
    startNode(
        """
        domain: shop
        descriptors:
          - key: %s
            value: %s
            rate_limit: {unit: minute, requests_per_unit: 2}
        """
            .formatted(key, value));
    for (int i = 0; i < 3; i++) {
      hit(key, value);
    }

    JsonObject rule =
        firstStatusDomain()
            .getAsJsonArray("rules")
            .get(0)
            .getAsJsonObject();

    assertThat(rule.get("rule").getAsString())
        .isEqualTo(key + "_" + value)
        .hasSizeGreaterThan(StatsKeys.MAX_LABEL_CHARS);
    assertThat(rule.get("total_hits").getAsLong()).isEqualTo(3);
    assertThat(rule.get("over_limit").getAsLong()).isEqualTo(1);
  }

  @Test
  void explain_descriptor_linesOfTheExplainCommandWithTheCurrentCount() throws Exception {
    startNode(true);
    hit("remote_address", "10.0.0.1");

    HttpResponse<String> answer =
        post(
            "/v1/Explain",
            "{\"domain\":\"shop\",\"descriptors\":[{\"entries\":"
                + "[{\"key\":\"remote_address\",\"value\":\"10.0.0.1\"}]}]}");

    assertThat(answer.statusCode()).isEqualTo(200);
    JsonArray lines =
        JsonParser.parseString(answer.body()).getAsJsonObject().getAsJsonArray("lines");
    assertThat(lines.asList().stream().map(JsonElement::getAsString))
        .contains("descriptor 1: remote_address=10.0.0.1")
        .anyMatch(line -> line.startsWith("  matched: remote_address (any value) ("))
        .anyMatch(line -> line.startsWith("  policy 1: 2 per minute"))
        .anyMatch(line -> line.startsWith("    now: 1 of 2 remaining, UNDER_LIMIT, resets in "));
  }

  @Test
  void explain_descriptorWithALimitOverride_explainsTheOverrideCounterTheDecisionCounts()
      throws Exception {
    startNode(true);
    String body =
        "{\"domain\":\"shop\",\"descriptors\":[{\"entries\":"
            + "[{\"key\":\"remote_address\",\"value\":\"10.0.0.1\"}],"
            + "\"limit\":{\"requests_per_unit\":1000,\"unit\":\"HOUR\"}}]}";
    assertThat(post("/json", body).statusCode()).isEqualTo(200);

    HttpResponse<String> answer = post("/v1/Explain", body);

    assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
    JsonArray lines =
        JsonParser.parseString(answer.body()).getAsJsonObject().getAsJsonArray("lines");
    assertThat(lines.asList().stream().map(JsonElement::getAsString))
        .containsExactly(
            "descriptor 1: remote_address=10.0.0.1",
            "  limit override: 1000 per hour, from the descriptor's limit; rules are not matched",
            "  counter: unique_key \"14:remote_address=8:10.0.0.1\"",
            "  policy 1: 1000 per hour, fixed_window, limit override, counter name"
                + " \"envoy-override:4:shop/HOUR\"",
            "    now: 999 of 1000 remaining, UNDER_LIMIT, resets in 3600 s");
  }

  @Test
  void explain_valueShapedLikeAnExponent_explained() throws Exception {
    startNode(true);

    HttpResponse<String> answer =
        post(
            "/v1/Explain",
            "{\"domain\":\"shop\",\"descriptors\":[{\"entries\":"
                + "[{\"key\":\"remote_address\",\"value\":\"1E1234\"}]}]}");

    assertThat(answer.statusCode()).as(answer.body()).isEqualTo(200);
    assertThat(answer.body()).contains("descriptor 1: remote_address=1E1234");
  }

  @Test
  void explain_badInput_400NamingTheField() throws Exception {
    startNode(true);

    assertBadRequest(
        "{\"descriptors\":[]}", "domain is empty; it must be a domain of the loaded config: shop");
    assertBadRequest("{\"domain\":\"nope\"}", "domain is 'nope'");
    assertBadRequest("{\"domain\":\"shop\"}", "descriptors is empty");
    assertBadRequest(
        "{\"domain\":\"shop\",\"descriptors\":[{}]}", "descriptors[0].entries is empty");
    assertBadRequest(
        "{\"domain\":\"shop\",\"descriptors\":[{\"entries\":[{\"key\":\"a\",\"value\":\"b\"}]},"
            + "{\"entries\":[{\"value\":\"x\"}]}]}",
        "descriptors[1].entries[0].key is empty");
    assertBadRequest("{\"domain\":\"shop\",\"descriptor\":[]}", "descriptor");
    assertBadRequest(
        "{\"domain\":[\"shop\"],\"descriptors\":[]}", "field 'domain' is [\"shop\"]; it must be a string");
    assertBadRequest(
        "{\"domain\":\"shop\",\"descriptors\":[{\"entries\":[{\"key\":\"a\",\"value\":7}]}]}",
        "field 'descriptors[0].entries[0].value' is 7; it must be a string");
    assertBadRequest("not json", "invalid request body");
  }

  @Test
  void explain_syntaxError_400SayingWhereWithoutJavaExceptionNamesOrGsonLinks() throws Exception {
    startNode(true);

    assertThat(message(post("/v1/Explain", "{\"domain\":\"shop\",\"descriptors\":[{\"a\":1,}]}")))
        .isEqualTo(
            "invalid request body: malformed JSON: Expected name at line 1 column 41 path"
                + " $.descriptors[0].a"
                + SHAPE);
    assertThat(message(post("/v1/Explain", "{'domain':'shop'}")))
        .isEqualTo(
            "invalid request body: malformed JSON: not standard JSON (RFC 8259) at line 1 column 3"
                + " path $."
                + SHAPE);
    assertThat(message(post("/v1/Explain", "[\"a\",")))
        .isEqualTo(
            "invalid request body: malformed JSON: End of input at line 1 column 6 path $[1]"
                + SHAPE);
  }

  private static final String SHAPE =
      "; it must be {\"domain\":\"...\",\"descriptors\":[{\"entries\":"
          + "[{\"key\":\"...\",\"value\":\"...\"}]}]}";

  @Test
  void explain_fieldSetTwice_400InsteadOfTheLastOneWinning() throws Exception {
    startNode(true);

    assertThat(
            message(
                post(
                    "/v1/Explain",
                    "{\"domain\":\"shop\",\"descriptors\":[{\"entries\":[{\"key\":\"a\","
                        + "\"value\":\"b\",\"value\":\"c\"}]}]}")))
        .isEqualTo(
            "invalid request body: field 'descriptors[0].entries[0].value' is set twice; it must be"
                + " set at most once in its object");
  }

  /** Returns the message of a 400 answer. */
  private static String message(HttpResponse<String> answer) {
    assertThat(answer.statusCode()).as(answer.body()).isEqualTo(400);
    return JsonParser.parseString(answer.body()).getAsJsonObject().get("message").getAsString();
  }

  @Test
  void explain_moreDescriptorsThanACallMayCarry_400NamingTheCountAndTheMost() throws Exception {
    startNode(true);
    StringJoiner descriptors = new StringJoiner(",");
    for (int i = 0; i < 1001; i++) {
      descriptors.add("{\"entries\":[{\"key\":\"remote_address\",\"value\":\"" + i + "\"}]}");
    }

    assertBadRequest(
        "{\"domain\":\"shop\",\"descriptors\":[" + descriptors + "]}",
        "descriptors has 1001 descriptors; at most 1000 are allowed");
  }

  @Test
  void explain_fewerDescriptorsThanTheCapButMoreCountersThanACallChecks_everyCurrentCount()
      throws Exception {
    startNode(
        """
        domain: shop
        descriptors:
          - key: account
            rate_limits:
              - {unit: second, requests_per_unit: 5}
              - {unit: minute, requests_per_unit: 50}
        """);
    StringJoiner descriptors = new StringJoiner(",");
    for (int i = 0; i < 501; i++) {
      descriptors.add("{\"entries\":[{\"key\":\"account\",\"value\":\"a" + i + "\"}]}");
    }

    HttpResponse<String> answer =
        post("/v1/Explain", "{\"domain\":\"shop\",\"descriptors\":[" + descriptors + "]}");

    assertThat(answer.statusCode()).isEqualTo(200);
    List<String> lines =
        JsonParser.parseString(answer.body()).getAsJsonObject().getAsJsonArray("lines").asList()
            .stream()
            .map(JsonElement::getAsString)
            .toList();
    assertThat(lines).noneMatch(line -> line.startsWith("current counts not available"));
    assertThat(lines.stream().filter(line -> line.startsWith("    now: ")))
        .hasSize(1002)
        .allMatch(line -> line.contains(" remaining, UNDER_LIMIT, resets in "));
  }

  @Test
  void explain_numberWithAHugeExponent_refusedAtOnce() throws Exception {
    startNode(true);

    assertTimeoutPreemptively(
        Duration.ofSeconds(10),
        () ->
            assertBadRequest(
                "{\"domain\":\"shop\",\"hits_addend\":1e99999999}",
                "the number at $.hits_addend has the exponent 99999999"));
  }

  private void assertBadRequest(String body, String message) throws Exception {
    HttpResponse<String> answer = post("/v1/Explain", body);
    assertThat(answer.statusCode()).as(body).isEqualTo(400);
    assertThat(JsonParser.parseString(answer.body()).getAsJsonObject().get("message").getAsString())
        .as(body)
        .contains(message);
  }

  @Test
  void envoyOff_statusSaysSo_explain404() throws Exception {
    startNode(false);

    JsonObject status = JsonParser.parseString(get("/v1/Status").body()).getAsJsonObject();
    HttpResponse<String> explain = post("/v1/Explain", "{\"domain\":\"shop\"}");

    assertThat(status.getAsJsonObject("envoy").get("enabled").getAsBoolean()).isFalse();
    assertThat(status.getAsJsonObject("envoy").getAsJsonArray("domains")).isEmpty();
    assertThat(explain.statusCode()).isEqualTo(404);
    assertThat(explain.body()).contains("WEIR_ENVOY_CONFIG");
  }

  @Test
  void forcedStartWithoutADomain_explain503LikeNoConfig() throws Exception {
    Path empty = Files.createDirectory(dir.resolve("empty"));
    node =
        WeirNode.builder(TestConfigs.loopback())
            .clock(clock)
            .store(new InMemoryBucketStore(clock))
            .envoy(
                EnvoySettings.fromEnvironment(
                    Map.of(
                        "WEIR_ENVOY_CONFIG", empty.toString(),
                        "WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG", "true")))
            .start();

    HttpResponse<String> explain =
        post(
            "/v1/Explain",
            "{\"domain\":\"shop\","
                + "\"descriptors\":[{\"entries\":[{\"key\":\"a\",\"value\":\"b\"}]}]}");

    assertThat(explain.statusCode()).isEqualTo(503);
    JsonObject answer = JsonParser.parseString(explain.body()).getAsJsonObject();
    assertThat(answer.get("code").getAsInt()).isEqualTo(14);
    assertThat(answer.get("message").getAsString()).startsWith("no descriptor config is loaded yet");
  }

  @Test
  void page_servedFromTheJar_loadingNothingFromElsewhere() throws Exception {
    startNode(false);

    HttpResponse<String> page = get("/ui/");
    HttpResponse<String> script = get("/ui/status.js");
    HttpResponse<String> style = get("/ui/status.css");

    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.headers().firstValue("Content-Type")).hasValue("text/html; charset=utf-8");
    assertThat(page.headers().firstValue("Content-Security-Policy").orElseThrow())
        .startsWith("default-src 'none'; script-src 'self';");
    assertThat(page.body()).contains("<script src=\"status.js\"").doesNotContain("http");
    assertThat(script.statusCode()).isEqualTo(200);
    assertThat(script.body()).contains("../v1/Status").doesNotContain("http:");
    assertThat(style.statusCode()).isEqualTo(200);
  }

  @Test
  void jsonThePageReads_neverStoredByACache() throws Exception {
    startNode(true);
    hit("remote_address", "10.9.9.9");

    for (String path : List.of("/v1/Status", "/v1/TopLimited", "/v1/TopLimited?scope=cluster")) {
      HttpResponse<String> answer = get(path);
      assertThat(answer.statusCode()).as(path).isEqualTo(200);
      assertThat(answer.headers().firstValue("Cache-Control")).as(path).hasValue("no-store");
    }
  }

  @Test
  void page_explainFormsOverrideUnits_theUnitsALimitOverrideMayCarry() throws Exception {
    startNode(false);

    String page = get("/ui/").body();

    Matcher select =
        Pattern.compile("<select id=\"explain-limit-unit\"[^>]*>(.*?)</select>", Pattern.DOTALL)
            .matcher(page);
    assertThat(select.find()).as("the explain form's override unit select").isTrue();
    List<String> offered =
        Pattern.compile("<option value=\"([A-Z]+)\"")
            .matcher(select.group(1))
            .results()
            .map(option -> option.group(1))
            .toList();
    List<String> allowed =
        Arrays.stream(RateLimitUnit.values())
            .filter(u -> u != RateLimitUnit.UNRECOGNIZED && Units.fromOverride(u).isPresent())
            .map(RateLimitUnit::name)
            .toList();
    assertThat(offered).isEqualTo(allowed);
  }

  @Test
  void bareUi_redirectedRelatively_soAProxysPathPrefixIsKept() throws Exception {
    startNode(false);

    HttpResponse<String> bare = get("/ui");

    assertThat(bare.statusCode()).isEqualTo(308);
    String location = bare.headers().firstValue("Location").orElseThrow();
    // A reverse proxy serving the node under /weir/ passes the Location through unchanged.
    assertThat(URI.create("http://proxy/weir/ui").resolve(location))
        .isEqualTo(URI.create("http://proxy/weir/ui/"));
    assertThat(uri("/ui").resolve(location)).isEqualTo(uri("/ui/"));
  }

  /** The first Envoy domain of the status page's {@code /v1/Status} answer. */
  private JsonObject firstStatusDomain() throws Exception {
    return JsonParser.parseString(get("/v1/Status").body())
        .getAsJsonObject()
        .getAsJsonObject("envoy")
        .getAsJsonArray("domains")
        .get(0)
        .getAsJsonObject();
  }
}
