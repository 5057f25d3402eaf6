package dev.weir.core.quota;

import java.util.Objects;

/**
 * A share a bucket's owner sends, unasked, to the node of a proxy's stream.
 *
 * @param key the key of the bucket's counter
 * @param client the proxy, as its stream's node named it
 * @param share the proxy's new share
 */
public record QuotaPush(String key, String client, QuotaShare share) {

  /** Creates a push. */
  public QuotaPush {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(client, "client");
    Objects.requireNonNull(share, "share");
  }
}
