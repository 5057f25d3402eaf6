package dev.weir.core.quota;

import dev.weir.core.model.RateLimitRequest;
import java.time.Duration;
import java.util.Objects;

/**
 * One proxy's usage of one quota bucket since its previous report, as the node its stream is
 * connected to saw it.
 *
 * @param rule the bucket's counter ({@code name}, {@code unique_key}) and its rule ({@code limit},
 *     {@code duration}, {@code algorithm}, {@code burst}); its hits, behavior and time are not used
 * @param client the proxy: its stream's identity, see {@link QuotaClients}
 * @param allowed requests the proxy allowed since its previous report
 * @param denied requests the proxy denied since its previous report
 * @param elapsedMillis the time the counts cover; 0 when unknown (a bucket's first report on a
 *     stream, or a request for a new share without new counts)
 * @param intervalMillis the time between the proxy's reports
 * @param released whether the proxy's stream ended, releasing its share (the counts are not used)
 */
public record QuotaUsage(
    RateLimitRequest rule,
    String client,
    long allowed,
    long denied,
    long elapsedMillis,
    long intervalMillis,
    boolean released) {

  /** The longest time one usage may cover: a day; a peer's longer one is refused. */
  public static final long MAX_ELAPSED_MILLIS = Duration.ofDays(1).toMillis();

  /** Creates a usage. */
  public QuotaUsage {
    Objects.requireNonNull(rule, "rule");
    Objects.requireNonNull(client, "client");
  }

  /** Returns a usage of {@code client} that releases its share of {@code rule}'s bucket. */
  public static QuotaUsage release(RateLimitRequest rule, String client, long intervalMillis) {
    return new QuotaUsage(rule, client, 0, 0, 0, intervalMillis, true);
  }

  /** Returns the key of the bucket's counter, {@code name + "_" + unique_key}. */
  public String key() {
    return rule.hashKey();
  }
}
