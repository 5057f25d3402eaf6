package dev.weir.envoy.xds;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.Algorithm;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DescriptorLevel;
import dev.weir.envoy.config.DescriptorNode;
import dev.weir.envoy.config.RateLimitRule;
import dev.weir.proto.ratelimit.config.v3.RateLimitConfig;
import dev.weir.proto.ratelimit.config.v3.RateLimitDescriptor;
import dev.weir.proto.ratelimit.config.v3.RateLimitPolicy;
import dev.weir.proto.ratelimit.config.v3.RateLimitReplace;
import dev.weir.proto.ratelimit.config.v3.RateLimitUnit;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.util.List;
import org.junit.jupiter.api.Test;

/** An xDS resource loads as the descriptor YAML it stands for, every field kept. */
class RateLimitConfigYamlTest {

  @Test
  void of_everyField_loadsAsTheRulesItDescribes() throws Exception {
    RateLimitConfig config =
        RateLimitConfig.newBuilder()
            .setName("eg/default/route")
            .setDomain("default/eg/http")
            .addDescriptors(
                RateLimitDescriptor.newBuilder()
                    .setKey("httproute/default/backend/rule/0/match/0/*")
                    .setValue("httproute/default/backend/rule/0/match/0/*")
                    .addDescriptors(
                        RateLimitDescriptor.newBuilder()
                            .setKey("rule-0-match-0")
                            .setShadowMode(true)
                            .setDetailedMetric(true)
                            .setQuotaMode(true)
                            .setRateLimit(
                                RateLimitPolicy.newBuilder()
                                    .setUnit(RateLimitUnit.WEEK)
                                    .setRequestsPerUnit(-1)
                                    .setName("per-user")
                                    .addReplaces(RateLimitReplace.newBuilder().setName("open")))))
            .addDescriptors(
                RateLimitDescriptor.newBuilder()
                    .setKey("internal")
                    .setRateLimit(RateLimitPolicy.newBuilder().setUnlimited(true).setName("open")))
            .build();

    DescriptorLevel root =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(List.of(new ConfigFile("xds", RateLimitConfigYaml.of(config))))
            .domain("default/eg/http")
            .orElseThrow()
            .root();

    DescriptorNode user =
        root.exact(
                "httproute/default/backend/rule/0/match/0/*",
                "httproute/default/backend/rule/0/match/0/*")
            .orElseThrow()
            .children()
            .exact("rule-0-match-0", "")
            .orElseThrow();
    assertThat(user.shadowMode()).isTrue();
    assertThat(user.detailedMetric()).isTrue();
    assertThat(user.quotaMode()).isTrue();
    assertThat(user.rule().orElseThrow())
        .isEqualTo(
            new RateLimitRule(
                4_294_967_295L,
                Unit.WEEK,
                false,
                "per-user",
                List.of("open"),
                Algorithm.FIXED_WINDOW,
                0,
                0));
    RateLimitRule internal = root.exact("internal", "").orElseThrow().rule().orElseThrow();
    assertThat(internal.unlimited()).isTrue();
    assertThat(internal.unit()).isEqualTo(Unit.UNKNOWN);
  }

  @Test
  void of_valuesThatLookLikeOtherYamlTypes_stayStrings() throws Exception {
    DescriptorLevel root = compiledWithRule("yes", "0x10");

    assertThat(root.exact("yes", "0x10")).isPresent();
  }

  @Test
  void of_valueWithAControlCharacter_staysAStringTheParserReads() throws Exception {
    DescriptorLevel root = compiledWithRule("yes", "a\u0001b\u0085c");

    assertThat(root.exact("yes", "a\u0001b\u0085c")).isPresent();
  }

  /** Returns the root level of domain {@code d} with one rule, written as YAML and compiled. */
  private static DescriptorLevel compiledWithRule(String key, String value) throws Exception {
    RateLimitConfig config =
        RateLimitConfig.newBuilder()
            .setDomain("d")
            .addDescriptors(
                RateLimitDescriptor.newBuilder()
                    .setKey(key)
                    .setValue(value)
                    .setRateLimit(
                        RateLimitPolicy.newBuilder()
                            .setUnit(RateLimitUnit.SECOND)
                            .setRequestsPerUnit(1)))
            .build();
    return new ConfigLoader(ConfigLoadOptions.DEFAULTS)
        .compile(List.of(new ConfigFile("xds", RateLimitConfigYaml.of(config))))
        .domain("d")
        .orElseThrow()
        .root();
  }
}
