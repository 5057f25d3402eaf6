package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.envoy.service.WarmUpRequests;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class NodeWarmUpTest {

  @Test
  void budget_readsWeirWarmup() {
    assertThat(NodeWarmUp.budget(new EnvReader(Map.of()))).isEqualTo(Duration.ofSeconds(30));
    assertThat(NodeWarmUp.budget(new EnvReader(Map.of("WEIR_WARMUP", "0s"))))
        .isEqualTo(Duration.ZERO);
    assertThat(NodeWarmUp.budget(new EnvReader(Map.of("WEIR_WARMUP", "2m"))))
        .isEqualTo(Duration.ofMinutes(2));
    assertThatThrownBy(() -> NodeWarmUp.budget(new EnvReader(Map.of("WEIR_WARMUP", "3m"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("WEIR_WARMUP='3m' is not valid");
  }

  @Test
  void nativeRequests_oneOrTenItemsWithAFewHotKeysAndManyCold() throws Exception {
    List<GetRateLimitsReq> requests = new ArrayList<>();
    for (byte[] bytes : NativeWarmUpRequests.of(NodeWarmUp.REQUESTS)) {
      requests.add(GetRateLimitsReq.parseFrom(bytes));
    }

    assertThat(requests).hasSize(NodeWarmUp.REQUESTS);
    assertThat(requests).extracting(GetRateLimitsReq::getRequestsCount).containsOnly(1, 10);
    List<RateLimitReq> items =
        requests.stream().flatMap(request -> request.getRequestsList().stream()).toList();
    assertThat(items).extracting(RateLimitReq::getName).containsOnly(NativeWarmUpRequests.NAME);
    Map<String, Long> uses =
        items.stream()
            .collect(Collectors.groupingBy(RateLimitReq::getUniqueKey, Collectors.counting()));
    assertThat(uses.values().stream().filter(count -> count > 100))
        .as("hot keys, each used many times")
        .hasSize(WarmUpRequests.HOT_VALUES);
    assertThat(uses).hasSizeGreaterThan(WarmUpRequests.COLD_VALUES / 2);
  }
}
