package dev.weir.core.model;

/** The behavior bit flags of a request, valued as on the wire ({@code pb.gubernator.Behavior}). */
public final class Behavior {
  /** The default: forwarded requests are batched. */
  public static final int BATCHING = 0;
  /** Forward this request to its owner at once, alone. */
  public static final int NO_BATCHING = 1;
  /** Answer from the local copy and send hits to the owner asynchronously. */
  public static final int GLOBAL = 2;
  /** {@code duration} is a calendar interval code, see {@link GregorianInterval}. */
  public static final int DURATION_IS_GREGORIAN = 4;
  /** Reset the bucket to its full limit. */
  public static final int RESET_REMAINING = 8;
  /** Declared by Gubernator and inert there; accepted and ignored. */
  public static final int MULTI_REGION = 16;
  /** A request for more than remains empties the bucket. */
  public static final int DRAIN_OVER_LIMIT = 32;
  /** Every flag declared above; a caller's other bits are accepted and ignored. */
  public static final int KNOWN = 63;

  private Behavior() {}

  /** Returns whether {@code flags} has {@code flag} set. */
  public static boolean has(int flags, int flag) {
    return (flags & flag) != 0;
  }
}
