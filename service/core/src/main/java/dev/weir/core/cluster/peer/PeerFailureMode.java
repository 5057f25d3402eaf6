package dev.weir.core.cluster.peer;

import java.util.Locale;

/**
 * What the keys of a peer found down get while it is down ({@code WEIR_PEER_FAILURE_MODE}).
 */
public enum PeerFailureMode {

  /**
   * The peer is taken off the ring: its keys are answered by their next owner among the peers that
   * answer, from a bucket that starts without the counts the peer holds, and handed back to it when
   * it answers again. The default: no decision fails, and admission beyond a limit is bounded by
   * one limit per key moved per outage.
   */
  REROUTE,

  /**
   * The peer stays on the ring and its keys get an error at once (no wait for a deadline) until it
   * answers again, as Gubernator does (which, unlike this mode, waits for each call's deadline and
   * keeps a dead static peer until discovery drops it). Limits stay exact; decisions fail.
   */
  FAIL;

  /** Returns the setting's value as written in the variable, e.g. {@code reroute}. */
  public String value() {
    return name().toLowerCase(Locale.ROOT);
  }
}
