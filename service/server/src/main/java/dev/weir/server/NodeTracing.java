package dev.weir.server;

import dev.weir.core.config.ConfigException;
import dev.weir.core.tracing.ClusterTracing;
import dev.weir.envoy.service.MatchTracing;
import dev.weir.gubernator.NativeTracing;
import io.grpc.ServerInterceptor;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.spi.ConfigurationException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's OpenTelemetry SDK, built from {@link TracingSettings} by the SDK's autoconfiguration
 * (OTLP exporter, batch span processor), with what traces the node: the front-door interceptor,
 * the HTTP front doors, the Envoy config match, the native answers and the cluster's spans. Exists
 * only when tracing is on; {@link #close} exports the spans still buffered.
 */
final class NodeTracing implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(NodeTracing.class);

  private static final String RESOURCE_ATTRIBUTES = "otel.resource.attributes";

  /** An SDK property name in an SDK message, such as {@code otel.traces.sampler.arg}. */
  private static final Pattern PROPERTY = Pattern.compile("otel(?:\\.[a-z0-9_]+)+");

  /** The instrumentation scope of Weir's spans. */
  static final String SCOPE = "dev.weir";

  /** The most {@link #close} waits for the last spans to be exported. */
  static final long CLOSE_SECONDS = 5;

  private final OpenTelemetrySdk sdk;
  private final Tracer tracer;

  private NodeTracing(OpenTelemetrySdk sdk) {
    this.sdk = sdk;
    this.tracer = sdk.getTracer(SCOPE, BuildInfo.version());
  }

  /**
   * Builds the SDK {@code settings} describe; they must be enabled.
   *
   * @throws ConfigException naming the {@code OTEL_*} variable whose value Weir or the SDK refused
   *     (for example an endpoint that is not a URL), its value and what is allowed
   */
  static NodeTracing start(TracingSettings settings) {
    if (!settings.enabled()) {
      throw new IllegalArgumentException("tracing is off");
    }
    settings.check();
    Map<String, String> properties = properties(settings);
    OpenTelemetrySdk sdk;
    try {
      sdk =
          AutoConfiguredOpenTelemetrySdk.builder()
              .addPropertiesCustomizer(config -> properties)
              .disableShutdownHook()
              .build()
              .getOpenTelemetrySdk();
    } catch (ConfigurationException | IllegalArgumentException e) {
      throw refused(e, properties);
    }
    LOG.info("tracing: on, {}", settings.describe());
    return new NodeTracing(sdk);
  }

  /**
   * Returns the one-line error of a value the SDK refused: the {@code OTEL_*} variable of the
   * property its message names, the value and the SDK's reason.
   */
  static ConfigException refused(RuntimeException e, Map<String, String> properties) {
    String reason = e.getMessage() == null ? e.toString() : e.getMessage().strip();
    reason = reason.lines().map(String::strip).reduce((a, b) -> a + " " + b).orElse(reason);
    Matcher named = PROPERTY.matcher(reason);
    String key = null;
    while (named.find()) {
      String candidate = named.group();
      while (!properties.containsKey(candidate) && candidate.lastIndexOf('.') > 4) {
        candidate = candidate.substring(0, candidate.lastIndexOf('.'));
      }
      if (properties.containsKey(candidate)
          && (key == null || candidate.length() > key.length())) {
        key = candidate;
      }
    }
    if (key == null) {
      return new ConfigException("the OTEL_* tracing settings are not valid: " + reason);
    }
    String inVariables = PROPERTY.matcher(reason).replaceAll(m -> TracingSettings.variable(m.group()));
    return new ConfigException(
        TracingSettings.variable(key) + "='" + properties.get(key) + "' is not valid: " + inVariables);
  }

  /**
   * Returns the SDK properties of {@code settings}, their resource attributes added to {@code
   * otel.resource.attributes} (percent-encoded, as the SDK reads them).
   */
  static Map<String, String> properties(TracingSettings settings) {
    if (settings.resource().isEmpty()) {
      return settings.properties();
    }
    StringJoiner attributes = new StringJoiner(",");
    String given = settings.properties().get(RESOURCE_ATTRIBUTES);
    if (given != null && !given.isBlank()) {
      attributes.add(given);
    }
    settings
        .resource()
        .forEach((key, value) -> attributes.add(key + "=" + percentEncoded(value)));
    Map<String, String> out = new HashMap<>(settings.properties());
    out.put(RESOURCE_ATTRIBUTES, attributes.toString());
    return out;
  }

  private static String percentEncoded(String value) {
    return URLEncoder.encode(value, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /** Returns the interceptor of the front-door services. */
  ServerInterceptor frontDoor() {
    return new FrontDoorTracing(tracer);
  }

  /** Returns the tracing of the HTTP front doors. */
  HttpFrontDoorTracing http() {
    return new HttpFrontDoorTracing(tracer);
  }

  /** Returns the spans of the Envoy front door's config match. */
  MatchTracing configMatch() {
    return new OtelMatchTracing(tracer);
  }

  /** Returns the tracing of native calls' answers. */
  NativeTracing nativeCalls() {
    return new OtelNativeTracing();
  }

  /** Returns the spans of the cluster's request path. */
  ClusterTracing cluster() {
    return new OtelClusterTracing(tracer);
  }

  /** Exports every span ended so far, waiting at most {@link #CLOSE_SECONDS}. */
  void flush() {
    sdk.getSdkTracerProvider().forceFlush().join(CLOSE_SECONDS, TimeUnit.SECONDS);
  }

  /** Exports the spans still buffered and stops the SDK. */
  @Override
  public void close() {
    sdk.shutdown().join(CLOSE_SECONDS, TimeUnit.SECONDS);
  }
}
