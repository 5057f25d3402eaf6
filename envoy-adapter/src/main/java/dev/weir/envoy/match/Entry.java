package dev.weir.envoy.match;

import java.util.Objects;

/**
 * One entry of a request descriptor.
 *
 * @param key the entry key
 * @param value the entry value, possibly empty
 */
public record Entry(String key, String value) {

  /** Creates an entry. */
  public Entry {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(value, "value");
  }
}
