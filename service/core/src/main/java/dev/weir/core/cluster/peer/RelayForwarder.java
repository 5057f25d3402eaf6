package dev.weir.core.cluster.peer;

import dev.weir.core.cluster.batch.Batcher;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Sends forwarded items to an owner this node does not reach through a peer that does ({@link
 * IndirectProbes#via}), batched per relaying peer and owner like direct forwards ({@code
 * WEIR_BATCH_LIMIT}, {@code WEIR_BATCH_WAIT}, deadline {@code WEIR_BATCH_TIMEOUT}).
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

  /** Sends {@code request} to its owner {@code target} through the peer {@code via}. */
  public CompletableFuture<RateLimitResponse> forward(
      String via, String target, RateLimitRequest request) {
    if (settings.disableBatching()) {
      return send(via, target, List.of(request)).thenApply(list -> list.get(0));
    }
    return batchers
        .computeIfAbsent(via, v -> new ConcurrentHashMap<>())
        .computeIfAbsent(
            target,
            t ->
                new Batcher<>(
                    settings.batchLimit(),
                    settings.batchWait(),
                    clock,
                    batch -> send(via, t, batch)))
        .submit(request);
  }

  private CompletableFuture<List<RateLimitResponse>> send(
      String via, String target, List<RateLimitRequest> batch) {
    return pool.call(via, c -> c.relay(target, batch, settings.batchTimeout()));
  }

  /** Sends what is queued. */
  @Override
  public void close() {
    batchers.values().forEach(m -> m.values().forEach(Batcher::close));
  }
}
