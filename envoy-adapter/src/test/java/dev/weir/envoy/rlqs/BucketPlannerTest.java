package dev.weir.envoy.rlqs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.service.CounterKeys;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BucketPlannerTest {

  private static final String YAML =
      """
      domain: edge
      descriptors:
        - key: name
          value: api
          descriptors:
            - key: user
              rate_limit: {unit: minute, requests_per_unit: 600}
        - key: name
          value: internal
          rate_limit: {unlimited: true}
        - key: name
          value: search
          rate_limits:
            - {unit: second, requests_per_unit: 100, algorithm: token_bucket}
            - {unit: minute, requests_per_unit: 3000}
      """;

  private final BucketPlanner planner = new BucketPlanner(new CounterKeys(256), 4);

  private static DomainConfig edge() throws Exception {
    return new ConfigLoader(ConfigLoadOptions.DEFAULTS)
        .compile(List.of(new ConfigFile("edge.yaml", YAML)))
        .domain("edge")
        .orElseThrow();
  }

  @Test
  void plan_entriesAreMatchedSortedByKey_whateverTheMapsOrder() throws Exception {
    BucketPlan plan = planner.plan(edge(), Map.of("user", "alice", "name", "api"));

    assertThat(plan).isInstanceOf(BucketPlan.Limited.class);
    RateLimitRequest policy = ((BucketPlan.Limited) plan).policies().get(0);
    assertThat(policy.limit()).isEqualTo(600);
    assertThat(policy.duration()).isEqualTo(60_000);
    assertThat(policy.algorithm()).isEqualTo(Algorithm.FIXED_WINDOW.number());
    assertThat(policy.name()).startsWith(BucketPlanner.PREFIX + "envoy:");
    assertThat(policy.uniqueKey()).isEqualTo("4:name=3:api,4:user=5:alice");
  }

  @Test
  void plan_twoUsers_countOnTwoCounters() throws Exception {
    RateLimitRequest alice =
        ((BucketPlan.Limited) planner.plan(edge(), Map.of("name", "api", "user", "alice")))
            .policies()
            .get(0);
    RateLimitRequest bob =
        ((BucketPlan.Limited) planner.plan(edge(), Map.of("name", "api", "user", "bob")))
            .policies()
            .get(0);

    assertThat(alice.hashKey()).isNotEqualTo(bob.hashKey());
    assertThat(alice.name()).isEqualTo(bob.name());
  }

  @Test
  void plan_severalPolicies_isOneCounterEach() throws Exception {
    BucketPlan plan = planner.plan(edge(), Map.of("name", "search"));

    assertThat(((BucketPlan.Limited) plan).policies())
        .extracting(RateLimitRequest::limit, RateLimitRequest::algorithm)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(100L, Algorithm.TOKEN_BUCKET.number()),
            org.assertj.core.groups.Tuple.tuple(3000L, Algorithm.FIXED_WINDOW.number()));
  }

  @Test
  void plan_unlimitedRule_isUnlimited() throws Exception {
    assertThat(planner.plan(edge(), Map.of("name", "internal")))
        .isInstanceOf(BucketPlan.Unlimited.class);
  }

  @Test
  void plan_noRuleOrUnknownDomain_isUnmatched() throws Exception {
    assertThat(planner.plan(edge(), Map.of("name", "other")))
        .isInstanceOf(BucketPlan.Unmatched.class);
    assertThat(planner.plan(edge(), Map.of("name", "api")))
        .isInstanceOf(BucketPlan.Unmatched.class);
    assertThat(planner.plan(null, Map.of("name", "api"))).isInstanceOf(BucketPlan.Unmatched.class);
  }

  @Test
  void plan_moreEntriesThanAllowed_isRefusedNamingTheSetting() throws Exception {
    BucketPlan plan =
        planner.plan(edge(), Map.of("a", "1", "b", "2", "c", "3", "d", "4", "e", "5"));

    assertThat(plan).isInstanceOf(BucketPlan.Refused.class);
    assertThat(((BucketPlan.Refused) plan).reason())
        .contains("5 entries", "WEIR_MAX_DESCRIPTOR_ENTRIES");
    assertThat(((BucketPlan.Refused) plan).counted()).isEqualTo(RefusalReason.TOO_MANY_ENTRIES);
  }

  @Test
  void plan_emptyValue_isRefused() throws Exception {
    assertThat(planner.plan(edge(), Map.of("name", ""))).isInstanceOf(BucketPlan.Refused.class);
  }

  @Test
  void plan_emptyKeyOrValue_isRefusedNamingTheEntry() throws Exception {
    assertThat(((BucketPlan.Refused) planner.plan(edge(), Map.of("name", ""))).reason())
        .isEqualTo(
            "bucket entry 'name' has an empty value; keys and values must be non-empty");
    assertThat(((BucketPlan.Refused) planner.plan(edge(), Map.of("", "v"))).reason())
        .isEqualTo(
            "a bucket entry of value 'v' has an empty key; keys and values must be non-empty");
  }

  @Test
  void plan_emptyKeyBesideAHugeValue_quotesTheValueCutShort() throws Exception {
    String reason =
        ((BucketPlan.Refused) planner.plan(edge(), Map.of("", "v".repeat(60_000)))).reason();

    assertThat(reason)
        .startsWith("a bucket entry of value '" + "v".repeat(64) + "…' (60000 characters)")
        .hasSizeLessThan(200);
  }

  @Test
  void name_isTheSameForTheSameEntriesInAnyOrder() {
    assertThat(planner.name(Map.of("b", "2", "a", "1")))
        .isEqualTo(planner.name(new java.util.TreeMap<>(Map.of("a", "1", "b", "2"))));
  }
}
