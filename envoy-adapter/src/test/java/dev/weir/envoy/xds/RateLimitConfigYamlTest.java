package dev.weir.envoy.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ListValue;
import com.google.protobuf.NullValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import dev.weir.core.model.Algorithm;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DescriptorConfigException;
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
import java.util.Map;
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
  void of_stringsYamlV2ReadsAsBooleans_stayStrings() throws Exception {
    Struct nested = Struct.newBuilder().putFields("n", string("Y")).build();
    Struct metadata =
        Struct.newBuilder()
            .putFields("premium", string("y"))
            .putFields("tiers", Value.newBuilder().setStructValue(nested).build())
            .build();

    DescriptorLevel root = compiled(descriptor("y").setValue("N").setMetadata(metadata));

    assertThat(root.exact("y", "N").orElseThrow().metadata())
        .isEqualTo(Map.of("premium", "y", "tiers", Map.of("n", "Y")));
  }

  @Test
  void of_valueWithAControlCharacter_staysAStringTheParserReads() throws Exception {
    DescriptorLevel root = compiledWithRule("yes", "a\u0001b\u0085c");

    assertThat(root.exact("yes", "a\u0001b\u0085c")).isPresent();
  }

  @Test
  void of_metadata_compilesToTheRulesMetadata() throws Exception {
    Struct metadata = Struct.newBuilder().putFields("team", string("a")).build();

    DescriptorLevel root = compiled(descriptor("k").setMetadata(metadata));

    assertThat(root.exact("k", "").orElseThrow().metadata()).isEqualTo(Map.of("team", "a"));
  }

  @Test
  void of_metadataOfEveryKind_compilesAsTheSameMapWrittenInAFile() throws Exception {
    Struct owner = Struct.newBuilder().putFields("name", string("b")).build();
    Struct metadata =
        Struct.newBuilder()
            .putFields("team", string("a"))
            .putFields("weight", Value.newBuilder().setNumberValue(3).build())
            .putFields("ratio", Value.newBuilder().setNumberValue(0.5).build())
            .putFields("huge", Value.newBuilder().setNumberValue(1e300).build())
            .putFields("on", Value.newBuilder().setBoolValue(true).build())
            .putFields("none", Value.newBuilder().setNullValue(NullValue.NULL_VALUE).build())
            .putFields("unset", Value.getDefaultInstance())
            .putFields(
                "tags",
                Value.newBuilder()
                    .setListValue(
                        ListValue.newBuilder()
                            .addValues(string("x"))
                            .addValues(Value.newBuilder().setNumberValue(1)))
                    .build())
            .putFields("owner", Value.newBuilder().setStructValue(owner).build())
            .putFields("true", string("7"))
            .putFields("", string(""))
            .build();
    String file =
        """
        domain: d
        descriptors:
          - key: k
            metadata:
              team: a
              weight: 3
              ratio: 0.5
              huge: 1.0e+300
              "on": true
              none: null
              unset: ~
              tags: [x, 1]
              owner: {name: b}
              "true": "7"
              "": ""
        """;

    DescriptorLevel fromXds = compiled(descriptor("k").setMetadata(metadata));
    DescriptorLevel fromFile =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(List.of(new ConfigFile("file", file)))
            .domain("d")
            .orElseThrow()
            .root();

    Map<String, Object> expected = fromFile.exact("k", "").orElseThrow().metadata();
    assertThat(expected).containsEntry("weight", 3.0).containsEntry("tags", List.of("x", 1.0));
    assertThat(fromXds.exact("k", "").orElseThrow().metadata())
        .containsExactlyEntriesOf(expected);
  }

  @Test
  void of_metadataWithANonFiniteNumber_isRefusedAsInAFile() {
    Struct metadata =
        Struct.newBuilder()
            .putFields("none", Value.newBuilder().setNumberValue(Double.NaN).build())
            .build();

    assertThatThrownBy(() -> compiled(descriptor("k").setMetadata(metadata)))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .containsExactly(
                        "xds: error parsing metadata: invalid number .NaN at line 5: allowed are"
                            + " finite numbers (a JSON answer cannot carry .inf or .nan)"));
  }

  private static Value string(String text) {
    return Value.newBuilder().setStringValue(text).build();
  }

  private static RateLimitDescriptor.Builder descriptor(String key) {
    return RateLimitDescriptor.newBuilder().setKey(key);
  }

  /** Returns the root level of domain {@code d} holding {@code descriptor}, written and compiled. */
  private static DescriptorLevel compiled(RateLimitDescriptor.Builder descriptor)
      throws Exception {
    RateLimitConfig config =
        RateLimitConfig.newBuilder().setDomain("d").addDescriptors(descriptor).build();
    return new ConfigLoader(ConfigLoadOptions.DEFAULTS)
        .compile(List.of(new ConfigFile("xds", RateLimitConfigYaml.of(config))))
        .domain("d")
        .orElseThrow()
        .root();
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
