package dev.weir.core.toplimited;

/**
 * The failure of asking a node for its top-limited keys when it does not count them ({@code
 * WEIR_TOP_LIMITED=false} there): its keys are missing from any sum, not zero.
 */
public final class TopLimitedOffException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  /** The message: which setting turned the view off and which value turns it on. */
  public static final String MESSAGE =
      "this member does not count its top-limited keys (WEIR_TOP_LIMITED=false there);"
          + " set WEIR_TOP_LIMITED=true on it to include them";

  /** Creates the failure, without a stack trace: it is an answer, not a bug. */
  public TopLimitedOffException() {
    super(MESSAGE, null, false, false);
  }
}
