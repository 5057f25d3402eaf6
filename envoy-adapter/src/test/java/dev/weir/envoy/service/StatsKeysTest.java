package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.envoy.match.Entry;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class StatsKeysTest {

  private static List<Entry> entries(int count, String keyPrefix) {
    List<Entry> entries = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      String key = keyPrefix + i;
      entries.add(new Entry(key + "k".repeat(256 - key.length()), "v"));
    }
    return entries;
  }

  @Test
  void override_manyLongKeysACallerSent_labelBoundedAndStillDistinct() {
    CounterKeys keys = new CounterKeys(256, 256, 256);

    String one = StatsKeys.override(entries(64, "a"), keys);
    String other = StatsKeys.override(entries(64, "b"), keys);

    assertThat(one)
        .hasSizeLessThanOrEqualTo(StatsKeys.MAX_LABEL_CHARS)
        .startsWith("limit_override.a0");
    assertThat(other).hasSizeLessThanOrEqualTo(StatsKeys.MAX_LABEL_CHARS).isNotEqualTo(one);
    assertThat(StatsKeys.override(entries(64, "a"), keys))
        .as("the same keys, the same label")
        .isEqualTo(one);
  }

  @Test
  void override_usualKeys_labelAsTheReferenceWritesIt() {
    assertThat(StatsKeys.override(List.of(new Entry("tenant", "x"), new Entry("path", "/y"))))
        .isEqualTo("limit_override.tenant.path");
  }

  @Test
  void bounded_cutInsideASurrogatePair_keepsThePairWhole() {
    // The cut falls after 467 characters (512 less a '.' and the 44 of the digest): inside a pair.
    String label = "x".repeat(466) + "😀".repeat(100);

    String bounded = StatsKeys.bounded(label);

    assertThat(bounded).hasSizeLessThanOrEqualTo(StatsKeys.MAX_LABEL_CHARS);
    assertThat(bounded).startsWith("x".repeat(466) + ".#");
    assertThat(bounded.codePoints()).noneMatch(c -> c >= 0xd800 && c <= 0xdfff);
  }
}
