package dev.weir.envoy.config;

import java.util.List;
import java.util.Optional;
import org.yaml.snakeyaml.nodes.Node;

/**
 * One descriptor as decoded from YAML, before its rules are checked; {@code metadata} may be null.
 */
record RawDescriptor(
    String key,
    String value,
    Optional<RawRateLimit> rateLimit,
    List<RawDescriptor> descriptors,
    boolean shadowMode,
    boolean quotaMode,
    boolean detailedMetric,
    boolean valueToMetric,
    boolean shareThreshold,
    Node metadata) {}
