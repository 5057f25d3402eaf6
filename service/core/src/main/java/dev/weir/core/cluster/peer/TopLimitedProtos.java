package dev.weir.core.cluster.peer;

import dev.weir.core.toplimited.LimitedKey;
import dev.weir.core.toplimited.TopLimitedEntry;
import dev.weir.core.toplimited.TopLimitedView;
import dev.weir.proto.gubernator.TopLimitedResp;
import java.util.ArrayList;
import java.util.List;

/** Translates a {@link TopLimitedView} to and from the peer protocol's {@code TopLimitedResp}. */
public final class TopLimitedProtos {

  private TopLimitedProtos() {}

  /** Returns the wire answer of {@code view}. */
  public static TopLimitedResp toProto(TopLimitedView view) {
    TopLimitedResp.Builder out =
        TopLimitedResp.newBuilder().setFloor(view.floor()).setTotal(view.total());
    for (TopLimitedEntry e : view.entries()) {
      LimitedKey key = e.key();
      out.addEntriesBuilder()
          .setSource(key.source())
          .setDomain(key.domain())
          .setRule(key.rule())
          .addAllEntries(key.entries())
          .setOverLimit(e.overLimit())
          .setHits(e.hits())
          .setError(e.error());
    }
    return out.build();
  }

  /**
   * Returns the view of {@code resp}; an entry whose key does not pair names with values is
   * dropped, and its count raises the floor so that the bounds still hold.
   */
  public static TopLimitedView fromProto(TopLimitedResp resp) {
    List<TopLimitedEntry> entries = new ArrayList<>(resp.getEntriesCount());
    long floor = Math.max(0, resp.getFloor());
    for (dev.weir.proto.gubernator.TopLimitedEntry e : resp.getEntriesList()) {
      if (e.getEntriesCount() % 2 != 0) {
        floor = Math.max(floor, e.getOverLimit());
        continue;
      }
      entries.add(
          new TopLimitedEntry(
              new LimitedKey(e.getSource(), e.getDomain(), e.getRule(), e.getEntriesList()),
              e.getOverLimit(),
              e.getHits(),
              e.getError()));
    }
    return new TopLimitedView(entries, floor, resp.getTotal());
  }
}
