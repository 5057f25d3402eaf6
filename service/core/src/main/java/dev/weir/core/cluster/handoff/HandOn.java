package dev.weir.core.cluster.handoff;

import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.ring.HashRing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The answer to items a peer forwarded to this node as their owner: each item whose key this node's
 * current ring gives to another peer (the sender routed on a ring that still names this node, as a
 * peer does until it applies a change) is handed on to that owner, so that its hits count on the
 * bucket this node handed over, not on the copy it kept; the other items are answered here.
 *
 * <p>Design: an item is handed on at most once. The handed-on item carries the metadata a forward
 * carries (its {@code time_zone}, which decides a Gregorian window, whatever the rest weighs) and
 * {@link #HANDED_ON} (this node's address), and its receiver answers it whatever its own ring says,
 * so two nodes whose rings disagree about a key do not pass it back and forth. An item a peer only
 * relayed here ({@link PeerProtos#relayedOnly}) is answered here as well, unless this node has left
 * its own ring (it drains after its leave notice, and the far node the notice did not reach still
 * relays to it): it is handed on then, or it would count on the copy this node kept after its last
 * transfer. The items of one call go in one call per owner, through the peer that vouches for it
 * when this node does not reach it ({@link PeerClientPool#voucherOf}; GLOBAL hits, which are never
 * relayed, directly), with {@code timeout} (shorter than the sender's deadline); the items of a
 * call that fails (the owner is down and this node has not found it yet, or does not answer in
 * time) are answered here after all by {@code formerOwner}, rather than with an error: the sender
 * may have routed them here because it found that owner down; GLOBAL hits among them go to the
 * owner with this node's GLOBAL sync, or are dropped when the owner may have applied them, since
 * this node's copy is no longer broadcast. With the ring empty (this node left and every other
 * member is down) every item is answered here.
 */
public final class HandOn {

  private static final Logger LOG = LoggerFactory.getLogger(HandOn.class);

  /** The metadata entry that marks an item an old owner handed on: its value is that node. */
  public static final String HANDED_ON = PeerProtos.HANDED_ON;

  private final String self;
  private final Supplier<HashRing> ring;
  private final PeerClientPool peers;
  private final Function<List<RateLimitRequest>, List<RateLimitResponse>> owner;
  private final Failed formerOwner;
  private final Consumer<String> reached;
  private final Duration timeout;
  // Warns of a failing Failed once per failure type per interval, not per call.
  private final RateLimitedLogger warnings;

  /** The answer of this node, the keys' former owner, to the items it failed to hand on. */
  @FunctionalInterface
  public interface Failed {

    /**
     * Returns the answers to {@code items}, in order, whose hand-on to their owner {@code owner}
     * failed with {@code error}.
     */
    List<RateLimitResponse> answer(List<RateLimitRequest> items, String owner, Throwable error);
  }

  /**
   * Creates the answer of node {@code self}: {@code owner} evaluates the items it answers as their
   * owner, {@code formerOwner} those whose hand-on failed; the items handed on go through {@code
   * peers} with deadline {@code timeout}, and {@code reached} is told each owner that answered a
   * hand-on.
   */
  public HandOn(
      String self,
      Supplier<HashRing> ring,
      PeerClientPool peers,
      Function<List<RateLimitRequest>, List<RateLimitResponse>> owner,
      Failed formerOwner,
      Consumer<String> reached,
      Duration timeout) {
    this(
        self, ring, peers, owner, formerOwner, reached, timeout, RateLimitedLogger.of(HandOn.class));
  }

  /**
   * Creates the answer as the public constructor does, warning through {@code warnings} when
   * {@code formerOwner} throws.
   */
  HandOn(
      String self,
      Supplier<HashRing> ring,
      PeerClientPool peers,
      Function<List<RateLimitRequest>, List<RateLimitResponse>> owner,
      Failed formerOwner,
      Consumer<String> reached,
      Duration timeout,
      RateLimitedLogger warnings) {
    this.self = self;
    this.ring = ring;
    this.peers = peers;
    this.owner = owner;
    this.formerOwner = formerOwner;
    this.reached = reached;
    this.timeout = timeout;
    this.warnings = warnings;
  }

  /**
   * Returns the answers to {@code requests}, in order: already complete when every item was
   * answered here.
   */
  public CompletableFuture<List<RateLimitResponse>> answer(List<RateLimitRequest> requests) {
    HashRing current = ring.get();
    Map<String, List<Integer>> moved = null;
    for (int i = 0; i < requests.size(); i++) {
      String to = movedTo(current, requests.get(i));
      if (to != null) {
        moved = moved == null ? new LinkedHashMap<>() : moved;
        moved.computeIfAbsent(to, o -> new ArrayList<>()).add(i);
      }
    }
    if (moved == null) {
      return CompletableFuture.completedFuture(owner.apply(requests));
    }
    RateLimitResponse[] answers = new RateLimitResponse[requests.size()];
    List<RateLimitRequest> here = new ArrayList<>();
    List<Integer> hereAt = new ArrayList<>();
    boolean[] handed = new boolean[requests.size()];
    moved.values().forEach(indexes -> indexes.forEach(i -> handed[i] = true));
    for (int i = 0; i < requests.size(); i++) {
      if (!handed[i]) {
        here.add(requests.get(i));
        hereAt.add(i);
      }
    }
    if (!here.isEmpty()) {
      List<RateLimitResponse> local = owner.apply(here);
      for (int j = 0; j < local.size(); j++) {
        answers[hereAt.get(j)] = local.get(j);
      }
    }
    List<CompletableFuture<Void>> calls = new ArrayList<>();
    moved.forEach((to, indexes) -> calls.add(handOn(to, indexes, requests, answers)));
    return CompletableFuture.allOf(calls.toArray(new CompletableFuture<?>[0]))
        .thenApply(v -> List.of(answers));
  }

  /**
   * Returns the owner {@code r} goes to, or null when this node answers it: a handed-on item is
   * answered here, unless it was only relayed here and this node has left its own ring.
   */
  private String movedTo(HashRing current, RateLimitRequest r) {
    if (current.isEmpty()) {
      return null;
    }
    Map<String, String> metadata = r.metadata();
    if (metadata.containsKey(HANDED_ON)
        && !(PeerProtos.relayedOnly(metadata) && !current.contains(self))) {
      return null;
    }
    String to = current.ownerOf(r.hashKey());
    return to.equals(self) ? null : to;
  }

  /**
   * Sends the items at {@code indexes} to their owner {@code to}, filling in their answers; never
   * fails. They go through the peer that vouches for {@code to} when one does, except GLOBAL hits,
   * which are never relayed.
   */
  private CompletableFuture<Void> handOn(
      String to, List<Integer> indexes, List<RateLimitRequest> requests, RateLimitResponse[] out) {
    String through = peers.voucherOf(to);
    if (through == null) {
      return handOn(to, null, indexes, requests, out);
    }
    List<Integer> global = new ArrayList<>();
    List<Integer> relayed = new ArrayList<>();
    for (int i : indexes) {
      (requests.get(i).has(Behavior.GLOBAL) ? global : relayed).add(i);
    }
    if (global.isEmpty()) {
      return handOn(to, through, relayed, requests, out);
    }
    if (relayed.isEmpty()) {
      return handOn(to, null, global, requests, out);
    }
    return CompletableFuture.allOf(
        handOn(to, null, global, requests, out), handOn(to, through, relayed, requests, out));
  }

  // Sends the items at indexes to to, through the peer through unless null; never fails.
  private CompletableFuture<Void> handOn(
      String to,
      String through,
      List<Integer> indexes,
      List<RateLimitRequest> requests,
      RateLimitResponse[] out) {
    List<RateLimitRequest> items = new ArrayList<>(indexes.size());
    for (int i : indexes) {
      items.add(marked(requests.get(i)));
    }
    Map<String, String> ownerMeta = Map.of("owner", to);
    CompletableFuture<List<RateLimitResponse>> call =
        through == null
            ? peers.call(to, c -> c.getPeerRateLimits(items, timeout, "handing on to"))
            : peers.call(through, c -> c.relay(to, items, timeout));
    return call.handle(
            (answers, error) -> {
              // getPeerRateLimits fails INTERNAL when the owner answers another number of items.
              if (error == null) {
                for (int j = 0; j < indexes.size(); j++) {
                  out[indexes.get(j)] = answers.get(j).withMetadata(ownerMeta);
                }
                reached.accept(to);
                return null;
              }
              LOG.debug(
                  "handing {} items on to {} failed, answered here: {}",
                  items.size(),
                  to,
                  error.getMessage());
              List<RateLimitRequest> original = new ArrayList<>(indexes.size());
              indexes.forEach(i -> original.add(requests.get(i)));
              List<RateLimitResponse> here = answeredHere(original, to, error);
              for (int j = 0; j < indexes.size(); j++) {
                out[indexes.get(j)] = here.get(j);
              }
              return null;
            });
  }

  /**
   * Returns {@code formerOwner}'s answers to {@code items}, whose hand-on to {@code to} failed with
   * {@code error}, or each item's error naming the failure when it throws: it runs in the call's
   * callback, where an exception would fail the whole batch, the items answered here and by other
   * owners included.
   */
  private List<RateLimitResponse> answeredHere(
      List<RateLimitRequest> items, String to, Throwable error) {
    try {
      return formerOwner.answer(items, to, error);
    } catch (RuntimeException e) {
      warnings.warn(
          e.getClass().getName(),
          "answering {} items whose hand-on to {} failed went wrong",
          items.size(),
          to,
          e);
      List<RateLimitResponse> failed = new ArrayList<>(items.size());
      for (RateLimitRequest r : items) {
        failed.add(RateLimitResponse.answerFailed(r, e));
      }
      return failed;
    }
  }

  /**
   * Returns {@code r} as it is handed on: with the metadata a forward carries ({@link
   * PeerProtos#forwardedMetadata}, so a Gregorian item keeps its {@code time_zone}) and {@link
   * #HANDED_ON} (and without {@link PeerProtos#RELAYED}, so its receiver answers it).
   */
  private RateLimitRequest marked(RateLimitRequest r) {
    Map<String, String> kept = new LinkedHashMap<>(PeerProtos.forwardedMetadata(r.metadata()));
    kept.remove(PeerProtos.RELAYED);
    kept.put(HANDED_ON, self);
    return r.withMetadata(kept);
  }

}
