package dev.weir.envoy.config;

import java.util.List;
import java.util.Optional;
import org.yaml.snakeyaml.nodes.Node;

/**
 * One descriptor as decoded from YAML, before its rules are checked; {@code metadata} may be null.
 * {@code rateLimits} is Weir's list of policies, null when the descriptor has none; {@code line} is
 * the 1-based line the descriptor starts on.
 */
record RawDescriptor(
    String key,
    String value,
    Optional<RawRateLimit> rateLimit,
    List<RawRateLimit> rateLimits,
    int line,
    List<RawDescriptor> descriptors,
    boolean shadowMode,
    boolean quotaMode,
    boolean detailedMetric,
    boolean valueToMetric,
    boolean shareThreshold,
    Node metadata) {}
