package dev.weir.core.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.AbstractMap;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RateLimitResponseTest {

  @Test
  void plainMetadata_isCopied_soLaterChangesToTheMapDoNotReachTheAnswer() {
    Map<String, String> plain = new HashMap<>(Map.of("owner", "a:1"));

    RateLimitResponse answer =
        RateLimitResponse.of(Status.UNDER_LIMIT, 5, 4, 0).withMetadata(plain);
    plain.put("owner", "b:1");

    assertThat(answer.metadata()).isNotSameAs(plain).containsExactly(Map.entry("owner", "a:1"));
  }

  @Test
  void immutableMetadata_isKeptAsGiven_soAnswersShareItAndWhatItHolds() {
    Fixed shared = new Fixed(Map.of("owner", "a:1"));

    RateLimitResponse first =
        RateLimitResponse.of(Status.UNDER_LIMIT, 5, 4, 0).withMetadata(shared);
    RateLimitResponse second = RateLimitResponse.error("x").withMetadata(shared);

    assertThat(first.metadata()).isSameAs(shared);
    assertThat(second.metadata()).isSameAs(shared);
  }

  @Test
  void emptyMetadata_ofEitherKind_becomesTheEmptyMap() {
    assertThat(RateLimitResponse.error("x").withMetadata(new Fixed(Map.of())).metadata())
        .isSameAs(Map.of());
    assertThat(RateLimitResponse.error("x").withMetadata(null).metadata()).isSameAs(Map.of());
  }

  /** An {@link ImmutableMetadata} over a fixed map. */
  private static final class Fixed extends AbstractMap<String, String>
      implements ImmutableMetadata {
    private final Map<String, String> entries;

    Fixed(Map<String, String> entries) {
      this.entries = entries;
    }

    @Override
    public Set<Map.Entry<String, String>> entrySet() {
      return entries.entrySet();
    }
  }
}
