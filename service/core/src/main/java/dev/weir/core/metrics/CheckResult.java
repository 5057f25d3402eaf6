package dev.weir.core.metrics;

import java.util.Locale;

/** How one rate-limit item was answered. */
public enum CheckResult {
  /** The hits fit in the limit. */
  UNDER_LIMIT,
  /** The limit was reached. */
  OVER_LIMIT,
  /** The item carried an error instead of a decision. */
  ERROR;

  /** Returns the label value, e.g. {@code over_limit}. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
