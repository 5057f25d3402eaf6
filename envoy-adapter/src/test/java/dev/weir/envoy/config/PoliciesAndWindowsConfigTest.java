package dev.weir.envoy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Weir's {@code rate_limits} (several policies on one rule) and {@code unit_multiplier}. */
class PoliciesAndWindowsConfigTest {

  private static EnvoyConfig compile(String yaml) throws DescriptorConfigException {
    return new ConfigLoader(ConfigLoadOptions.DEFAULTS)
        .compile(List.of(new ConfigFile("acct.yaml", yaml)));
  }

  private static DescriptorNode node(String yaml, String key) throws DescriptorConfigException {
    return compile(yaml).domain("acct").orElseThrow().root().exact(key, "").orElseThrow();
  }

  @Test
  void rateLimits_eachEntryAPolicyInOrder_withItsOwnCounterName() throws DescriptorConfigException {
    DescriptorNode account =
        node(
            """
            domain: acct
            descriptors:
              - key: account_id
                rate_limits:
                  - unit: second
                    requests_per_unit: 10
                  - unit: day
                    requests_per_unit: 1000
                    name: daily
                    algorithm: token_bucket
            """,
            "account_id");

    assertThat(account.limits())
        .extracting(RateLimitRule::unit, RateLimitRule::requestsPerUnit, RateLimitRule::name)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(Unit.SECOND, 10L, ""),
            org.assertj.core.groups.Tuple.tuple(Unit.DAY, 1000L, "daily"));
    assertThat(account.limits().get(1).algorithm())
        .isEqualTo(dev.weir.core.model.Algorithm.TOKEN_BUCKET);
    assertThat(account.counterName(0)).isEqualTo(account.counterName() + "|0");
    assertThat(account.counterName(1)).isEqualTo(account.counterName() + "|1");
    assertThat(account.source()).isEqualTo("acct.yaml:3");
  }

  @Test
  void calendar_alignsToTheUnitsInterval_inUtcOrTheRulesTimeZone()
      throws DescriptorConfigException {
    DescriptorNode account =
        node(
            """
            domain: acct
            descriptors:
              - key: account_id
                rate_limits:
                  - {unit: month, requests_per_unit: 1000, calendar: true}
                  - {unit: week, requests_per_unit: 300, calendar: true, time_zone: Europe/Berlin}
                  - {unit: day, requests_per_unit: 50}
            """,
            "account_id");

    assertThat(account.limits())
        .extracting(RateLimitRule::calendar)
        .containsExactly(
            java.util.Optional.of(
                new CalendarWindow(
                    dev.weir.core.model.GregorianInterval.MONTHS, java.time.ZoneOffset.UTC)),
            java.util.Optional.of(
                new CalendarWindow(
                    dev.weir.core.model.GregorianInterval.WEEKS,
                    java.time.ZoneId.of("Europe/Berlin"))),
            java.util.Optional.empty());
    assertThat(account.limits().get(1).requestDuration()).isEqualTo(3);
    assertThat(account.limits().get(1).requestMetadata())
        .isEqualTo(java.util.Map.of("time_zone", "Europe/Berlin"));
    assertThat(account.limits().get(2).requestDuration()).isEqualTo(86_400_000L);
    assertThat(account.limits().get(2).requestMetadata()).isEmpty();
  }

  @Test
  void rateLimit_singlePolicy_counterNameUnchanged() throws DescriptorConfigException {
    DescriptorNode user =
        node(
            """
            domain: acct
            descriptors:
              - key: user
                rate_limit: {unit: minute, requests_per_unit: 2}
            """,
            "user");

    assertThat(user.counterName(0)).isEqualTo(user.counterName()).isEqualTo("envoy:4:acct/4:user");
    assertThat(user.limits().get(0).unitMultiplier()).isEqualTo(1);
    assertThat(user.limits().get(0).windowMillis()).isEqualTo(60_000);
  }

  @Test
  void unitMultiplier_multipliesTheWindow_inRateLimitAndRateLimitsEntries()
      throws DescriptorConfigException {
    DescriptorNode five =
        node(
            """
            domain: acct
            descriptors:
              - key: ip
                rate_limits:
                  - {unit: minute, unit_multiplier: 5, requests_per_unit: 100}
                  - {unit: hour, requests_per_unit: 1000}
              - key: user
                rate_limit: {unit: second, unit_multiplier: 30, requests_per_unit: 3}
            """,
            "ip");

    assertThat(five.limits().get(0).windowMillis()).isEqualTo(300_000);
    assertThat(five.limits().get(0).unit()).isEqualTo(Unit.MINUTE);
    assertThat(five.limits().get(1).windowMillis()).isEqualTo(3_600_000);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          both | - key: a\\n    rate_limit: {unit: second, requests_per_unit: 1}\\n    rate_limits: [{unit: day, requests_per_unit: 5}] | acct.yaml: descriptor 'acct.a' has both rate_limit and rate_limits: use rate_limit for one policy, rate_limits for several
          empty | - key: a\\n    rate_limits: [] | acct.yaml: rate_limits of 'acct.a' is empty: list at least one policy
          unlimited | - key: a\\n    rate_limits: [{unlimited: true}] | acct.yaml: rate_limits of 'acct.a' has an unlimited entry: an unlimited rule uses rate_limit: {unlimited: true}
          zero multiplier | - key: a\\n    rate_limit: {unit: minute, unit_multiplier: 0, requests_per_unit: 1} | acct.yaml: invalid unit_multiplier '0' in rate_limit of 'acct.a': allowed values are whole numbers from 1 to 4294967295
          text multiplier | - key: a\\n    rate_limit: {unit: minute, unit_multiplier: five, requests_per_unit: 1} | acct.yaml: invalid unit_multiplier 'five' in rate_limit of 'acct.a': allowed values are whole numbers from 1 to 4294967295
          huge multiplier | - key: a\\n    rate_limit: {unit: year, unit_multiplier: 300000000, requests_per_unit: 1} | acct.yaml: invalid unit_multiplier '300000000' in rate_limit of 'acct.a': allowed values are whole numbers from 1 to 292471208
          policy replaces sibling | - key: a\\n    rate_limits: [{unit: second, requests_per_unit: 1, name: x}, {unit: day, requests_per_unit: 2, replaces: [{name: x}]}] | acct.yaml: replaces should not contain name of same descriptor: rate_limit of 'acct.a' at line 4 replaces 'x', a policy of the same descriptor; allowed are names of rules of other descriptors
          rate_limits in rate_limit | - key: a\\n    rate_limit:\\n      rate_limits: [] | acct.yaml: config error, unknown key 'rate_limits': in rate_limit of 'acct.a' at line 5; rate_limits belongs in a descriptor; allowed keys are unit, requests_per_unit, unlimited, name, replaces, algorithm, burst, behavior, unit_multiplier, calendar, time_zone
          multiplier outside rate_limit | - key: a\\n    unit_multiplier: 2 | acct.yaml: config error, unknown key 'unit_multiplier': in descriptor 'acct.a' at line 4; unit_multiplier belongs in a rate_limit map or a rate_limits entry; allowed keys are key, value, rate_limit, rate_limits, descriptors, shadow_mode, quota_mode, detailed_metric, value_to_metric, share_threshold, metadata
          calendar minute | - key: a\\n    rate_limit: {unit: minute, calendar: true, requests_per_unit: 1} | acct.yaml: invalid unit 'minute' with calendar: true in rate_limit of 'acct.a': allowed units are hour, day, week, month, year
          calendar second | - key: a\\n    rate_limit: {unit: second, calendar: true, requests_per_unit: 1} | acct.yaml: invalid unit 'second' with calendar: true in rate_limit of 'acct.a': allowed units are hour, day, week, month, year
          calendar not bool | - key: a\\n    rate_limit: {unit: day, calendar: monthly, requests_per_unit: 1} | acct.yaml: invalid calendar 'monthly' in rate_limit of 'acct.a': allowed values are true, false
          unknown zone | - key: a\\n    rate_limit: {unit: day, calendar: true, time_zone: Mars/Olympus, requests_per_unit: 1} | acct.yaml: invalid time_zone 'Mars/Olympus' in rate_limit of 'acct.a': allowed values are zone ids such as UTC or Europe/Berlin, and offsets such as +02:00
          zone without calendar | - key: a\\n    rate_limit: {unit: day, time_zone: UTC, requests_per_unit: 1} | acct.yaml: time_zone 'UTC' in rate_limit of 'acct.a' needs calendar: true (windows of fixed length have no time zone)
          calendar multiplier | - key: a\\n    rate_limit: {unit: day, calendar: true, unit_multiplier: 7, requests_per_unit: 1} | acct.yaml: invalid unit_multiplier '7' with calendar: true in rate_limit of 'acct.a': a calendar window is one unit, so the only allowed value is 1
          calendar outside rate_limit | - key: a\\n    calendar: true | acct.yaml: config error, unknown key 'calendar': in descriptor 'acct.a' at line 4; calendar belongs in a rate_limit map or a rate_limits entry; allowed keys are key, value, rate_limit, rate_limits, descriptors, shadow_mode, quota_mode, detailed_metric, value_to_metric, share_threshold, metadata
          """)
  void loadError_namesTheRuleAndWhatIsAllowed(String name, String descriptors, String message) {
    String yaml = "domain: acct\ndescriptors:\n  " + descriptors.replace("\\n", "\n") + "\n";

    assertThatThrownBy(() -> compile(yaml))
        .isInstanceOf(DescriptorConfigException.class)
        .hasMessage(message);
  }

  @Test
  void loadError_numberOrBooleanInQuotes_saysToWriteItWithoutQuotes() {
    for (String rule :
        List.of(
            "{unit: day, calendar: \"true\", requests_per_unit: 1}",
            "{unit: minute, unit_multiplier: '5', requests_per_unit: 1}",
            "{unit: minute, burst: \"10\", requests_per_unit: 1}")) {
      String yaml = "domain: acct\ndescriptors:\n  - key: a\n    rate_limit: " + rule + "\n";

      assertThatThrownBy(() -> compile(yaml))
          .as(rule)
          .isInstanceOf(DescriptorConfigException.class)
          .hasMessageEndingWith("(written in quotes, it is a string: write numbers and booleans without quotes)");
    }
  }
}
