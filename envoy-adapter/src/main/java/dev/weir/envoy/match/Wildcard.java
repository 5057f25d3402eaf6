package dev.weir.envoy.match;

/** Matches text against a pattern in which each {@code *} stands for zero or more characters. */
public final class Wildcard {

  private Wildcard() {}

  /** Returns whether {@code text} matches {@code pattern} as a whole. */
  public static boolean matches(String pattern, String text) {
    int p = 0;
    int t = 0;
    int star = -1;
    int resume = 0;
    while (t < text.length()) {
      if (p < pattern.length() && pattern.charAt(p) == '*') {
        star = p++;
        resume = t;
      } else if (p < pattern.length() && pattern.charAt(p) == text.charAt(t)) {
        p++;
        t++;
      } else if (star >= 0) {
        p = star + 1;
        t = ++resume;
      } else {
        return false;
      }
    }
    while (p < pattern.length() && pattern.charAt(p) == '*') {
      p++;
    }
    return p == pattern.length();
  }
}
