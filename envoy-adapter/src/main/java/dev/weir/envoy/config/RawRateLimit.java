package dev.weir.envoy.config;

import java.util.List;
import org.yaml.snakeyaml.nodes.Node;

/** A {@code rate_limit} block as decoded from YAML; the Weir extension nodes may be null. */
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
    Node timeZone) {}
