package dev.weir.core.toplimited;

import dev.weir.core.engine.SaturatingMath;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A set of top-limited keys with what bounds their counts: one sketch's counters, or several
 * sketches merged (a node's window, a cluster's nodes).
 *
 * @param entries the keys, the highest count first
 * @param floor an upper bound on the count of any key not listed (0 while no sketch was full)
 * @param total the over-limit answers the view counted, listed or not
 */
public record TopLimitedView(List<TopLimitedEntry> entries, long floor, long total) {

  /** The view of nothing. */
  public static final TopLimitedView EMPTY = new TopLimitedView(List.of(), 0, 0);

  private static final Comparator<TopLimitedEntry> HIGHEST_FIRST =
      Comparator.comparingLong(TopLimitedEntry::overLimit)
          .thenComparingLong(TopLimitedEntry::hits)
          .reversed()
          .thenComparing(e -> e.key().toString());

  /** Copies {@code entries}. */
  public TopLimitedView {
    entries = List.copyOf(entries);
  }

  /** Returns the view of {@code sketch}'s counters. */
  public static TopLimitedView of(SpaceSaving<LimitedKey> sketch) {
    return of(sketch.snapshot(), sketch.floor(), sketch.total());
  }

  /**
   * Returns the view of a sketch's {@code counters} (in any order), whose floor and total were
   * {@code floor} and {@code total}.
   */
  public static TopLimitedView of(
      List<SpaceSaving.Counted<LimitedKey>> counters, long floor, long total) {
    List<TopLimitedEntry> entries = new ArrayList<>(counters.size());
    for (SpaceSaving.Counted<LimitedKey> c : counters) {
      entries.add(new TopLimitedEntry(c.key(), c.count(), c.hits(), c.error()));
    }
    entries.sort(HIGHEST_FIRST);
    return new TopLimitedView(entries, floor, total);
  }

  /**
   * Returns {@code views} merged: a key's counts and hits are summed over the views that list it
   * (hits saturating at the ends of the long range), and its error is the sum of their errors and
   * of the floors of the views that do not (where it may have counted up to their floor); floors
   * and totals are summed. So a merged count is within its error of the truth, which is at most the
   * sum of the views' {@code total / counters}.
   */
  public static TopLimitedView merge(List<TopLimitedView> views) {
    if (views.size() == 1) {
      return views.get(0);
    }
    long floors = 0;
    long total = 0;
    Map<LimitedKey, long[]> sums = new HashMap<>();
    for (TopLimitedView view : views) {
      floors += view.floor();
      total += view.total();
      for (TopLimitedEntry e : view.entries()) {
        long[] sum = sums.computeIfAbsent(e.key(), k -> new long[4]);
        sum[0] += e.overLimit();
        sum[1] = SaturatingMath.add(sum[1], e.hits());
        sum[2] += e.error();
        sum[3] += view.floor();
      }
    }
    List<TopLimitedEntry> entries = new ArrayList<>(sums.size());
    for (Map.Entry<LimitedKey, long[]> s : sums.entrySet()) {
      long[] sum = s.getValue();
      entries.add(new TopLimitedEntry(s.getKey(), sum[0], sum[1], sum[2] + floors - sum[3]));
    }
    entries.sort(HIGHEST_FIRST);
    return new TopLimitedView(entries, floors, total);
  }

  /**
   * Returns this view with only its first {@code limit} entries, its floor raised to the count of
   * the first one left out (which bounds the count of every key left out).
   */
  public TopLimitedView first(int limit) {
    if (entries.size() <= limit) {
      return this;
    }
    long raised = Math.max(floor, entries.get(limit).overLimit());
    return new TopLimitedView(entries.subList(0, limit), raised, total);
  }
}
