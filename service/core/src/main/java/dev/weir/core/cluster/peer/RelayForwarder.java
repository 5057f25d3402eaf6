package dev.weir.core.cluster.peer;

import dev.weir.core.cluster.batch.Batcher;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Sends forwarded items to an owner this node does not reach through a peer that does ({@link
 * IndirectProbes#via}), batched per relaying peer and owner like direct forwards ({@code
 * WEIR_BATCH_LIMIT}, {@code WEIR_BATCH_WAIT}, deadline {@code WEIR_BATCH_TIMEOUT}): a call's items
 * are queued together, an event loop's items leave at the end of its round ({@link
 * EventLoopRoundEnd}), and {@code NO_BATCHING} items go alone at once.
 */
public final class RelayForwarder implements AutoCloseable {

  private final PeerClientPool pool;
  private final PeerClientSettings settings;
  private final Clock clock;
  private final Map<String, Map<String, Batcher<RateLimitRequest, RateLimitResponse>>> batchers =
      new ConcurrentHashMap<>();

  /** Creates the forwarder, calling relaying peers through {@code pool}. */
  public RelayForwarder(PeerClientPool pool, PeerClientSettings settings, Clock clock) {
    this.pool = pool;
    this.settings = settings;
    this.clock = clock;
  }

  /**
   * Sends {@code request} to its owner {@code target} through the peer {@code via}: queued for the
   * next batch, or sent alone at once when it has {@code NO_BATCHING} or batching is disabled.
   */
  public CompletableFuture<RateLimitResponse> forward(
      String via, String target, RateLimitRequest request) {
    if (alone(request)) {
      return send(via, target, List.of(request)).thenApply(list -> list.get(0));
    }
    return batcher(via, target).submit(request);
  }

  /**
   * Sends {@code requests} to their owner {@code target} through the peer {@code via} as {@link
   * #forward} does each, those that may be batched queued together so that they leave in one batch
   * (also when others go alone); one future per request, in order.
   */
  public List<CompletableFuture<RateLimitResponse>> forwardAll(
      String via, String target, List<RateLimitRequest> requests) {
    if (requests.size() == 1) {
      return List.of(forward(via, target, requests.get(0)));
    }
    return Batcher.submitAllButAlone(
        requests,
        this::alone,
        r -> forward(via, target, r),
        batchable -> batcher(via, target).submitAll(batchable));
  }

  private boolean alone(RateLimitRequest request) {
    return settings.disableBatching() || request.has(Behavior.NO_BATCHING);
  }

  private Batcher<RateLimitRequest, RateLimitResponse> batcher(String via, String target) {
    return batchers
        .computeIfAbsent(via, v -> new ConcurrentHashMap<>())
        .computeIfAbsent(
            target,
            t ->
                new Batcher<>(
                    settings.batchLimit(),
                    settings.batchWait(),
                    Batcher.MAX_IN_FLIGHT,
                    Batcher.maxQueued(settings.batchLimit()),
                    clock,
                    EventLoopRoundEnd.INSTANCE,
                    batch -> send(via, t, batch)));
  }

  /**
   * Sends {@code request} alone, at once, to its owner {@code target} through the peer {@code via}
   * with deadline {@code timeout}.
   */
  public CompletableFuture<RateLimitResponse> forwardNow(
      String via, String target, RateLimitRequest request, Duration timeout) {
    return pool.call(via, c -> c.relay(target, List.of(request), timeout))
        .thenApply(list -> list.get(0));
  }

  /** Returns the deadline of each relayed batch ({@code WEIR_BATCH_TIMEOUT}). */
  public Duration timeout() {
    return settings.batchTimeout();
  }

  private CompletableFuture<List<RateLimitResponse>> send(
      String via, String target, List<RateLimitRequest> batch) {
    return pool.call(via, c -> c.relay(target, batch, settings.batchTimeout()));
  }

  /**
   * Drops the batchers of pairs whose relaying peer or owner is not in {@code current}, sending
   * what they hold, so that peers that came and went do not keep one each.
   */
  public void retain(Collection<String> current) {
    batchers
        .entrySet()
        .removeIf(
            via -> {
              if (!current.contains(via.getKey())) {
                via.getValue().values().forEach(Batcher::close);
                return true;
              }
              via.getValue()
                  .entrySet()
                  .removeIf(
                      target -> {
                        if (current.contains(target.getKey())) {
                          return false;
                        }
                        target.getValue().close();
                        return true;
                      });
              return false;
            });
  }

  /** Returns how many (relaying peer, owner) pairs have a batcher. */
  int pairs() {
    return batchers.values().stream().mapToInt(Map::size).sum();
  }

  /** Sends what is queued. */
  @Override
  public void close() {
    batchers.values().forEach(m -> m.values().forEach(Batcher::close));
  }
}
