/**
 * The tracing hooks of the cluster's request path, with no tracing library: the server module
 * implements {@link dev.weir.core.tracing.ClusterTracing} with OpenTelemetry.
 */
package dev.weir.core.tracing;
