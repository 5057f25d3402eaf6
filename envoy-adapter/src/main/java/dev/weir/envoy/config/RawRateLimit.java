package dev.weir.envoy.config;

import java.util.List;
import org.yaml.snakeyaml.nodes.Node;

/**
 * A {@code rate_limit} block (or a {@code rate_limits} entry) as decoded from YAML; the Weir
 * extension nodes may be null, and {@code line} is the 1-based line the block starts on.
 */
record RawRateLimit(
    long requestsPerUnit,
    String unit,
    boolean unlimited,
    String name,
    List<String> replaces,
    Node algorithm,
    Node burst,
    Node behavior,
    Node unitMultiplier,
    Node calendar,
    Node timeZone,
    int line) {}
