package dev.weir.core.toplimited;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class SpaceSavingTest {

  /** Offers {@code stream} to a sketch of {@code k} counters and returns it. */
  private static SpaceSaving<String> offered(List<String> stream, int k) {
    SpaceSaving<String> sketch = new SpaceSaving<>(k);
    for (String key : stream) {
      sketch.offer(key, 1, 2);
    }
    return sketch;
  }

  private static Map<String, Long> truth(List<String> stream) {
    Map<String, Long> counts = new HashMap<>();
    for (String key : stream) {
      counts.merge(key, 1L, Long::sum);
    }
    return counts;
  }

  /**
   * Checks Space-Saving's guarantees of {@code sketch} against the true counts of {@code stream}.
   */
  private static void assertWithinBound(SpaceSaving<String> sketch, List<String> stream) {
    Map<String, Long> truth = truth(stream);
    long bound = stream.size() / sketch.capacity();
    Map<String, SpaceSaving.Counted<String>> counted = new HashMap<>();
    for (SpaceSaving.Counted<String> c : sketch.counted()) {
      counted.put(c.key(), c);
      long exact = truth.get(c.key());
      assertThat(c.count()).as("count of %s", c.key()).isGreaterThanOrEqualTo(exact);
      assertThat(c.count() - c.error())
          .as("count - error of %s", c.key())
          .isLessThanOrEqualTo(exact);
      assertThat(c.error()).as("error of %s", c.key()).isLessThanOrEqualTo(bound);
    }
    truth.forEach(
        (key, exact) -> {
          if (exact > bound) {
            assertThat(counted)
                .as("%s counted %d times, over N/k = %d", key, exact, bound)
                .containsKey(key);
          }
        });
    assertThat(sketch.floor()).isLessThanOrEqualTo(bound);
  }

  @Test
  void manyDistinctKeys_fewHeavyHitters_heavyHittersFoundWithinTheBound() {
    List<String> stream = new ArrayList<>();
    for (int i = 0; i < 100_000; i++) {
      stream.add("noise-" + i);
      if (i % 10 == 0) {
        stream.add("heavy-" + (i / 10) % 5);
      }
    }
    Collections.shuffle(stream, new Random(7));

    SpaceSaving<String> sketch = offered(stream, 100);

    assertWithinBound(sketch, stream);
    assertThat(sketch.counted().subList(0, 5))
        .extracting(SpaceSaving.Counted::key)
        .containsExactlyInAnyOrder("heavy-0", "heavy-1", "heavy-2", "heavy-3", "heavy-4");
    assertThat(sketch.total()).isEqualTo(stream.size());
  }

  @Test
  void heavyHittersArrivingLastAfterAFlood_stillFound() {
    List<String> stream = new ArrayList<>();
    for (int i = 0; i < 50_000; i++) {
      stream.add("flood-" + i);
    }
    for (int i = 0; i < 3_000; i++) {
      stream.add("late-" + i % 3);
    }

    SpaceSaving<String> sketch = offered(stream, 50);

    assertWithinBound(sketch, stream);
    assertThat(sketch.counted().subList(0, 3))
        .extracting(SpaceSaving.Counted::key)
        .containsExactlyInAnyOrder("late-0", "late-1", "late-2");
  }

  @Test
  void heavyHittersFirstThenAFlood_keptThroughTheFlood() {
    List<String> stream = new ArrayList<>();
    for (int i = 0; i < 9_000; i++) {
      stream.add("early-" + i % 3);
    }
    for (int i = 0; i < 50_000; i++) {
      stream.add("flood-" + i);
    }

    SpaceSaving<String> sketch = offered(stream, 50);

    assertWithinBound(sketch, stream);
    assertThat(sketch.counted().subList(0, 3))
        .extracting(SpaceSaving.Counted::key)
        .containsExactlyInAnyOrder("early-0", "early-1", "early-2");
  }

  @Test
  void skewedRandomStreams_countsWithinTheBound() {
    Random random = new Random(42);
    for (int round = 0; round < 20; round++) {
      List<String> stream = new ArrayList<>();
      for (int i = 0; i < 20_000; i++) {
        // Pareto-like: key j with weight about 1/j.
        int j = (int) Math.floor(Math.pow(5_000, random.nextDouble()));
        stream.add("k" + j);
      }
      assertWithinBound(offered(stream, 10 + round * 5), stream);
    }
  }

  @Test
  void hits_summedWhileTheKeyHoldsItsCounter() {
    SpaceSaving<String> sketch = new SpaceSaving<>(2);

    sketch.offer("a", 1, 3);
    sketch.offer("a", 1, 4);
    sketch.offer("b", 1, 1);
    sketch.offer("c", 1, 5);

    assertThat(sketch.counted())
        .containsExactlyInAnyOrder(
            new SpaceSaving.Counted<>("a", 2, 0, 7), new SpaceSaving.Counted<>("c", 2, 1, 5));
  }

  @Test
  void hits_summingPastTheLongRange_saturatesAtItsEnds() {
    SpaceSaving<String> sketch = new SpaceSaving<>(2);

    sketch.offer("a", 1, Long.MAX_VALUE);
    sketch.offer("a", 1, Long.MAX_VALUE);
    sketch.offer("b", 1, Long.MIN_VALUE);
    sketch.offer("b", 1, -1);

    assertThat(sketch.counted())
        .containsExactlyInAnyOrder(
            new SpaceSaving.Counted<>("a", 2, 0, Long.MAX_VALUE),
            new SpaceSaving.Counted<>("b", 2, 0, Long.MIN_VALUE));
  }

  @Test
  void clear_empties() {
    SpaceSaving<String> sketch = offered(List.of("a", "b", "c", "d"), 2);

    sketch.clear();
    sketch.offer("e", 1, 1);

    assertThat(sketch.counted()).containsExactly(new SpaceSaving.Counted<>("e", 1, 0, 1));
    assertThat(sketch.total()).isEqualTo(1);
    assertThat(sketch.floor()).isZero();
  }

  @Test
  void badArguments_refusedNamingTheValue() {
    assertThatThrownBy(() -> new SpaceSaving<String>(0))
        .hasMessage("capacity must be at least 1, got 0");
    assertThatThrownBy(() -> new SpaceSaving<String>(1).offer("a", 0, 0))
        .hasMessage("weight must be at least 1, got 0");
  }
}
