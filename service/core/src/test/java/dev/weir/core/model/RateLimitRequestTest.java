package dev.weir.core.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RateLimitRequestTest {

  private final RateLimitRequest request =
      RateLimitRequest.builder("requests_per_second", "account:1")
          .hits(2)
          .limit(10)
          .duration(1000)
          .behavior(Behavior.GLOBAL)
          .createdAt(1_700_000_000_000L)
          .metadata(Map.of("a", "1"))
          .build();

  @Test
  void withMetadata_replacesTheMetadataOnlyAndCopiesIt() {
    Map<String, String> given = new HashMap<>(Map.of("b", "2"));

    RateLimitRequest copy = request.withMetadata(given);
    given.put("c", "3");

    assertThat(copy.metadata()).containsExactly(Map.entry("b", "2"));
    assertThat(copy.withMetadata(request.metadata())).isEqualTo(request);
    assertThat(copy.hashKey()).isEqualTo(request.hashKey());
    assertThat(request.metadata()).containsExactly(Map.entry("a", "1"));
  }

  @Test
  void withMetadata_nullOrEmpty_leavesNoMetadata() {
    assertThat(request.withMetadata(null).metadata()).isEmpty();
    assertThat(request.withMetadata(Map.of()).metadata()).isEmpty();
  }
}
