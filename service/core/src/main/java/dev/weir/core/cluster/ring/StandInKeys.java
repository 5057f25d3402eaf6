package dev.weir.core.cluster.ring;

import dev.weir.core.engine.RequestValidator;

/**
 * The names of stand-in buckets: the buckets a node keeps of its own for keys whose owners have not
 * answered in time. No ring ownership applies to them, so hand-off and snapshots leave them where
 * they are.
 */
public final class StandInKeys {

  /**
   * The prefix of the name under which a node keeps its own stand-in bucket of a key; client names
   * may not start with it ({@link RequestValidator#RESERVED_NAME_PREFIX}).
   */
  public static final String PREFIX = RequestValidator.RESERVED_NAME_PREFIX;

  private StandInKeys() {}

  /** Returns whether {@code bucketKey} names a stand-in bucket. */
  public static boolean isStandIn(String bucketKey) {
    return bucketKey.startsWith(PREFIX);
  }
}
