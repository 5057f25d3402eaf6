package dev.weir.envoy.config;

import java.util.List;

/** One YAML file decoded: its name (the error prefix), its domain and its top-level descriptors. */
record ParsedFile(String fileName, String domain, List<RawDescriptor> descriptors) {}
