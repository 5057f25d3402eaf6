package dev.weir.envoy.config;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The rules at one nesting level: looked up by exact key and value, by key only, or through the
 * wildcard rules in config order.
 */
public final class DescriptorLevel {

  /** The empty level. */
  public static final DescriptorLevel EMPTY = new DescriptorLevel(List.of());

  private final Map<String, Map<String, DescriptorNode>> byKey;
  private final List<DescriptorNode> wildcards;
  private final List<DescriptorNode> all;

  /**
   * Creates a level holding {@code nodes} in config order; key and value pairs must be distinct.
   */
  public DescriptorLevel(List<DescriptorNode> nodes) {
    Map<String, Map<String, DescriptorNode>> index = new LinkedHashMap<>();
    List<DescriptorNode> patterns = new ArrayList<>();
    for (DescriptorNode node : nodes) {
      index.computeIfAbsent(node.key(), k -> new LinkedHashMap<>()).put(node.value(), node);
      if (node.isWildcard()) {
        patterns.add(node);
      }
    }
    index.replaceAll((k, v) -> Map.copyOf(v));
    this.byKey = Map.copyOf(index);
    this.wildcards = List.copyOf(patterns);
    this.all = List.copyOf(nodes);
  }

  /**
   * Returns the rule for exactly {@code key} and {@code value} ({@code ""} for the key-only rule).
   */
  public Optional<DescriptorNode> exact(String key, String value) {
    return Optional.ofNullable(exactOrNull(key, value));
  }

  /**
   * Returns the rule for exactly {@code key} and {@code value} ({@code ""} for the key-only rule),
   * or null.
   */
  public DescriptorNode exactOrNull(String key, String value) {
    Map<String, DescriptorNode> values = byKey.get(key);
    return values == null ? null : values.get(value);
  }

  /** Returns the wildcard rules of this level in config order. */
  public List<DescriptorNode> wildcards() {
    return wildcards;
  }

  /** Returns every rule of this level in config order. */
  public List<DescriptorNode> nodes() {
    return all;
  }

  /** Returns whether this level has no rules. */
  public boolean isEmpty() {
    return all.isEmpty();
  }
}
