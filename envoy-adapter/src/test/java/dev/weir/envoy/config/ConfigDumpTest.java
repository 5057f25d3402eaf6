package dev.weir.envoy.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ConfigDumpTest {

  @Test
  void of_printsEachLimitedRuleAsTheReferenceDebugEndpointDoes() throws Exception {
    EnvoyConfig config =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(
                List.of(
                    new ConfigFile(
                        "b.yaml",
                        """
                        domain: shop
                        descriptors:
                          - key: path
                            value: /api
                            descriptors:
                              - key: user
                                shadow_mode: true
                                rate_limit: {unit: minute, requests_per_unit: 10}
                          - key: internal
                            quota_mode: true
                            rate_limit: {unlimited: true}
                          - key: open
                        """),
                    new ConfigFile(
                        "a.yaml",
                        """
                        domain: api
                        descriptors:
                          - key: ip
                            rate_limits:
                              - {unit: second, requests_per_unit: 5}
                              - {unit: day, requests_per_unit: 1000}
                        """)));

    assertThat(ConfigDump.of(config))
        .isEqualTo(
            """
            api.ip: unit=SECOND requests_per_unit=5, shadow_mode: false, quota_mode: false
            api.ip: unit=DAY requests_per_unit=1000, shadow_mode: false, quota_mode: false
            shop.path_/api.user: unit=MINUTE requests_per_unit=10, shadow_mode: true, quota_mode: false
            shop.internal: unit=UNKNOWN requests_per_unit=0, shadow_mode: false, quota_mode: true
            """);
  }
}
