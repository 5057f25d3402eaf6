package dev.weir.core.testkit;

import dev.weir.ring.HashRing;
import java.util.ArrayList;
import java.util.List;

/**
 * Unique keys chosen by their owner on a ring, for tests whose point needs some items owned by one
 * peer and some by others. A handful of {@code key-0}, {@code key-1}, ... may all land on one peer
 * (with FNV-1a, keys that differ only in their last characters usually do).
 */
public final class RingKeys {

  /** The most keys tried before giving up: far more than any two-to-five-peer ring needs. */
  private static final int MOST_TRIED = 100_000;

  private RingKeys() {}

  /**
   * Returns the first key {@code prefix + i} whose bucket {@code name + "_" + key} {@code owner}
   * owns on {@code ring}.
   *
   * @throws IllegalStateException if {@value #MOST_TRIED} keys do not provide one
   */
  public static String ownedBy(HashRing ring, String name, String prefix, String owner) {
    return split(ring, name, prefix, owner, 1, 0).get(0);
  }

  /**
   * Returns unique keys {@code prefix + i} in the order found: {@code owned} of them whose bucket
   * {@code name + "_" + key} {@code owner} owns on {@code ring}, and {@code others} that another
   * peer owns.
   *
   * @throws IllegalStateException if {@value #MOST_TRIED} keys do not provide them
   */
  public static List<String> split(
      HashRing ring, String name, String prefix, String owner, int owned, int others) {
    List<String> keys = new ArrayList<>(owned + others);
    int ownedFound = 0;
    int othersFound = 0;
    for (int i = 0; ownedFound < owned || othersFound < others; i++) {
      if (i == MOST_TRIED) {
        throw new IllegalStateException(
            MOST_TRIED
                + " keys gave "
                + ownedFound
                + " of "
                + owned
                + " owned by "
                + owner
                + " and "
                + othersFound
                + " of "
                + others
                + " owned by other peers of "
                + ring.peers());
      }
      String key = prefix + i;
      if (ring.ownerOf(name + "_" + key).equals(owner)) {
        if (ownedFound < owned) {
          keys.add(key);
          ownedFound++;
        }
      } else if (othersFound < others) {
        keys.add(key);
        othersFound++;
      }
    }
    return keys;
  }
}
