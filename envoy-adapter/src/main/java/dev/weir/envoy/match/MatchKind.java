package dev.weir.envoy.match;

/** How a request entry matched a rule. */
public enum MatchKind {
  /** The rule names the entry's key and exact value. */
  EXACT,
  /** The rule's value is a {@code *} pattern the entry's value matches. */
  WILDCARD,
  /** The rule names only the key (any value). */
  KEY_ONLY
}
