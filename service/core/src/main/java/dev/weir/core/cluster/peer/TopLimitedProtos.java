package dev.weir.core.cluster.peer;

import com.google.protobuf.CodedOutputStream;
import dev.weir.core.toplimited.LimitedKey;
import dev.weir.core.toplimited.TopLimitedEntry;
import dev.weir.core.toplimited.TopLimitedView;
import dev.weir.proto.gubernator.TopLimitedResp;
import java.util.ArrayList;
import java.util.List;

/** Translates a {@link TopLimitedView} to and from the peer protocol's {@code TopLimitedResp}. */
public final class TopLimitedProtos {

  /**
   * The most bytes the entries of a node's answer to {@code PeersV1/TopLimited} take: 4 MiB, gRPC's
   * default message bound, well under a peer message's (64 MiB) and sent within the asker's 2 s;
   * room for about 2000 keys whose name and value are each 1 KiB (the default longest), about 250 of
   * 8 KiB each (the longest allowed), and 40 000 of under 100 bytes.
   */
  public static final int MAX_ANSWER_BYTES = 4 << 20;

  private TopLimitedProtos() {}

  /** Returns the wire answer of {@code view}, every entry of it. */
  public static TopLimitedResp toProto(TopLimitedView view) {
    return toProto(view, Integer.MAX_VALUE);
  }

  /**
   * Returns the wire answer of the first entries of {@code view} that fit in {@code maxBytes} (the
   * floor and total take up to 22 bytes more), its floor raised to the count of the first entry
   * left out (as {@link TopLimitedView#first} raises it), so that the bounds still hold.
   */
  public static TopLimitedResp toProto(TopLimitedView view, int maxBytes) {
    TopLimitedResp.Builder out = TopLimitedResp.newBuilder();
    long bytes = 0;
    int kept = 0;
    for (TopLimitedEntry e : view.entries()) {
      LimitedKey key = e.key();
      dev.weir.proto.gubernator.TopLimitedEntry entry =
          dev.weir.proto.gubernator.TopLimitedEntry.newBuilder()
              .setSource(key.source())
              .setDomain(key.domain())
              .setRule(key.rule())
              .addAllEntries(key.entries())
              .setOverLimit(e.overLimit())
              .setHits(e.hits())
              .setError(e.error())
              .build();
      bytes += CodedOutputStream.computeMessageSize(1, entry);
      if (bytes > maxBytes) {
        break;
      }
      out.addEntries(entry);
      kept++;
    }
    TopLimitedView sent = view.first(kept);
    return out.setFloor(sent.floor()).setTotal(sent.total()).build();
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
