package dev.weir.core.toplimited;

/**
 * Where a front door reports each key it answered over the limit. Front doors call it only for
 * over-limit answers, so an answer under the limit costs nothing but the branch that skips it.
 */
@FunctionalInterface
public interface OverLimitRecorder {

  /** The recorder that records nothing. */
  OverLimitRecorder NOOP = (key, hits) -> {};

  /** Records that {@code key} was answered over its limit for a request of {@code hits} hits. */
  void overLimit(LimitedKey key, long hits);
}
