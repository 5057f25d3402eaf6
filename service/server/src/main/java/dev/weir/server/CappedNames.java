package dev.weir.server;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The distinct names a span attribute lists, in the order first added, at most {@link
 * OtelClusterTracing#MAX_NAMES}: a name added once the set is full is dropped.
 */
final class CappedNames {

  private final Set<String> names = new LinkedHashSet<>();

  /** Adds {@code name} unless it is already here or the set is full. */
  void add(String name) {
    if (names.size() < OtelClusterTracing.MAX_NAMES) {
      names.add(name);
    }
  }

  /** Adds the names of {@code other}, in its order, as {@link #add} adds each. */
  void addAll(CappedNames other) {
    for (String name : other.names) {
      add(name);
    }
  }

  /** Returns whether no name was added. */
  boolean isEmpty() {
    return names.isEmpty();
  }

  /** Returns the names, in the order first added. */
  List<String> toList() {
    return List.copyOf(names);
  }
}
