package dev.weir.envoy.config;

import java.util.List;

/**
 * One YAML file decoded: its name (the error prefix), its domain, its top-level descriptors and
 * what it holds that loads but is likely a mistake (each {@code <file>: <text>}).
 */
record ParsedFile(
    String fileName, String domain, List<RawDescriptor> descriptors, List<String> warnings) {}
