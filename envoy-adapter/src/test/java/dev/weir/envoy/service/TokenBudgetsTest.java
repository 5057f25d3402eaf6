package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.UInt64Value;
import dev.weir.core.testkit.FakeClock;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.metrics.EnvoyMetrics;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The token-budget recipe of docs/envoy.md ("Token budgets for model traffic") through the Envoy
 * front door with Envoy's generated client: per user and model, input and output tokens, per minute
 * and per day, each descriptor carrying its token count as {@code hits_addend}.
 */
class TokenBudgetsTest {

  /** The recipe's rules, as docs/envoy.md gives them. */
  static final String YAML =
      """
      domain: llm
      descriptors:
        - key: user
          descriptors:
            - key: model
              descriptors:
                - key: tokens
                  value: input
                  descriptors:
                    - key: window
                      value: minute
                      rate_limit: {unit: minute, requests_per_unit: 10000, name: input-per-minute}
                    - key: window
                      value: day
                      rate_limit: {unit: day, requests_per_unit: 200000, name: input-per-day}
                - key: tokens
                  value: output
                  descriptors:
                    - key: window
                      value: minute
                      rate_limit: {unit: minute, requests_per_unit: 4000, name: output-per-minute}
                    - key: window
                      value: day
                      rate_limit: {unit: day, requests_per_unit: 50000, name: output-per-day}
      """;

  private final FakeClock clock = new FakeClock();
  private final ConfigHolder config = new ConfigHolder();
  private InProcessFrontDoor frontDoor;
  private RateLimitServiceGrpc.RateLimitServiceBlockingStub stub;

  @BeforeEach
  void start() throws Exception {
    EnvoySettings settings = EnvoySettings.fromEnvironment(Map.of());
    config.set(
        new ConfigLoader(settings.loadOptions())
            .compile(List.of(new ConfigFile("llm.yaml", YAML))));
    ShouldRateLimitHandler handler =
        new ShouldRateLimitHandler(
            config,
            new RecordingRateLimitService(clock),
            clock,
            settings,
            new EnvoyMetrics(new SimpleMeterRegistry()));
    frontDoor = new InProcessFrontDoor(handler);
    stub = frontDoor.stub();
  }

  @AfterEach
  void stop() {
    frontDoor.close();
  }

  /** One budget's descriptor of {@code user} on {@code model}, counting {@code tokens} tokens. */
  private static RateLimitDescriptor budget(
      String user, String model, String direction, String window, long tokens) {
    return RateLimitDescriptor.newBuilder()
        .addEntries(entry("user", user))
        .addEntries(entry("model", model))
        .addEntries(entry("tokens", direction))
        .addEntries(entry("window", window))
        .setHitsAddend(UInt64Value.of(tokens))
        .build();
  }

  private static RateLimitDescriptor.Entry entry(String key, String value) {
    return RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue(value).build();
  }

  private RateLimitResponse call(RateLimitDescriptor... descriptors) {
    return stub.shouldRateLimit(
        RateLimitRequest.newBuilder()
            .setDomain("llm")
            .addAllDescriptors(List.of(descriptors))
            .build());
  }

  @Test
  void largeAddend_countsEveryToken_andTheNextCallOverTheBudgetIsRefused() {
    RateLimitResponse first = call(budget("alice", "gpt", "input", "minute", 9_000));
    RateLimitResponse second = call(budget("alice", "gpt", "input", "minute", 2_000));

    assertThat(first.getOverallCode()).isEqualTo(Code.OK);
    assertThat(first.getStatuses(0).getLimitRemaining()).isEqualTo(1_000);
    assertThat(second.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(call(budget("bob", "gpt", "input", "minute", 2_000)).getOverallCode())
        .as("another user's budget")
        .isEqualTo(Code.OK);
  }

  @Test
  void severalBudgetsOnOneRequest_eachCountsItsOwnTokens_andTheStrictestDecides() {
    RateLimitResponse answer =
        call(
            budget("alice", "gpt", "input", "minute", 3_000),
            budget("alice", "gpt", "input", "day", 3_000),
            budget("alice", "gpt", "output", "minute", 4_500),
            budget("alice", "gpt", "output", "day", 4_500));

    assertThat(answer.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(answer.getStatusesList())
        .extracting(s -> s.getCurrentLimit().getName() + ":" + s.getCode())
        .containsExactly(
            "input-per-minute:OK",
            "input-per-day:OK",
            "output-per-minute:OVER_LIMIT",
            "output-per-day:OK");
    assertThat(answer.getStatuses(0).getLimitRemaining()).isEqualTo(7_000);
    assertThat(answer.getStatuses(1).getLimitRemaining()).isEqualTo(197_000);
  }

  @Test
  void budgetExhaustedByAStreamsTokens_theNextRequestsCheckIsRefused_untilTheWindowTurns() {
    // Before the request: a check of the budget with no tokens (Envoy's request path).
    RateLimitDescriptor check = budget("alice", "gpt", "output", "minute", 0);
    assertThat(call(check).getOverallCode()).isEqualTo(Code.OK);
    // When the stream is done: the response's output tokens (apply_on_stream_done), over budget.
    call(budget("alice", "gpt", "output", "minute", 3_000));
    call(budget("alice", "gpt", "output", "minute", 1_500));

    RateLimitResponse next = call(check);
    clock.advance(Duration.ofMinutes(1));
    RateLimitResponse nextMinute = call(check);

    assertThat(next.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(nextMinute.getOverallCode()).isEqualTo(Code.OK);
  }

  @Test
  void theRecipeInTheDocs_isTheseRules() throws IOException {
    String docs = Files.readString(Path.of("..", "docs", "envoy.md"));

    assertThat(docs).contains("```yaml\n" + YAML + "```");
  }
}
