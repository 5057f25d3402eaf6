package dev.weir.core.config;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * Finds the {@code WEIR_*} and {@code GUBER_*} variables of an environment that no setting reads,
 * such as a misspelled {@code WEIR_CAHCE_SIZE}, each with the known name closest to it.
 *
 * <p>Names are compared without their prefix, by edit distance counting a swap of two neighbouring
 * characters as one edit: {@code WEIR_CAHCE_SIZE} is one edit from {@code WEIR_CACHE_SIZE}, and
 * {@code GUBER_STATIC_PEERS}, a variable without a Gubernator alias, is zero edits from {@code
 * WEIR_STATIC_PEERS}. A known name is suggested when at most a quarter of the characters (one at
 * least, three at most) differ; a name with the same prefix wins a tie.
 */
public final class UnknownVariables {

  /** The prefixes of the variables checked. */
  public static final List<String> PREFIXES = List.of("WEIR_", "GUBER_");

  /**
   * A variable no setting reads.
   *
   * @param name the variable
   * @param closest the known variable it is probably meant to be, when one is close enough
   */
  public record Unknown(String name, Optional<String> closest) {}

  private final Set<String> known = new TreeSet<>();

  /** Creates the check for {@code variables}, known by their names and aliases. */
  public UnknownVariables(Collection<EnvVar> variables) {
    for (EnvVar variable : variables) {
      known.add(variable.name());
      variable.aliasName().ifPresent(known::add);
    }
  }

  /** Returns the known names, sorted. */
  public Set<String> known() {
    return Set.copyOf(known);
  }

  /** Returns the {@code WEIR_*} and {@code GUBER_*} names of {@code names} not known, sorted. */
  public List<Unknown> find(Collection<String> names) {
    List<Unknown> unknown = new ArrayList<>();
    for (String name : new TreeSet<>(names)) {
      if (prefix(name).isPresent() && !known.contains(name)) {
        unknown.add(new Unknown(name, closest(name)));
      }
    }
    return unknown;
  }

  private Optional<String> closest(String name) {
    String prefix = prefix(name).orElseThrow();
    String suffix = name.substring(prefix.length());
    int allowed = Math.max(1, Math.min(3, suffix.length() / 4));
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    boolean bestSamePrefix = false;
    for (String candidate : known) {
      String candidatePrefix = prefix(candidate).orElse("");
      int distance = distance(suffix, candidate.substring(candidatePrefix.length()));
      boolean samePrefix = candidatePrefix.equals(prefix);
      if (distance < bestDistance || distance == bestDistance && samePrefix && !bestSamePrefix) {
        best = candidate;
        bestDistance = distance;
        bestSamePrefix = samePrefix;
      }
    }
    return bestDistance <= allowed ? Optional.of(best) : Optional.empty();
  }

  private static Optional<String> prefix(String name) {
    return PREFIXES.stream().filter(name::startsWith).findFirst();
  }

  /**
   * Returns the optimal string alignment distance of {@code a} and {@code b}: the fewest
   * insertions, deletions, substitutions and swaps of neighbouring characters that turn one into
   * the other, no substring edited twice.
   */
  static int distance(String a, String b) {
    int[][] d = new int[a.length() + 1][b.length() + 1];
    for (int i = 0; i <= a.length(); i++) {
      d[i][0] = i;
    }
    for (int j = 0; j <= b.length(); j++) {
      d[0][j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
        if (i > 1
            && j > 1
            && a.charAt(i - 1) == b.charAt(j - 2)
            && a.charAt(i - 2) == b.charAt(j - 1)) {
          d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.length()][b.length()];
  }
}
