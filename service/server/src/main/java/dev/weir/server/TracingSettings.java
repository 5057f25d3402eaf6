package dev.weir.server;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * Whether a node exports traces and how: the OpenTelemetry SDK's autoconfiguration properties
 * ({@code otel.*}) it is built with, and the resource attributes it adds. Off unless configured:
 * in Weir mode by the standard {@code OTEL_*} variables ({@link #fromOtel}), in the
 * envoyproxy/ratelimit compatibility mode by the reference's {@code TRACING_*} variables with its
 * meanings and defaults ({@link #fromReference}). Only traces are exported: Weir's metrics are
 * served for Prometheus.
 *
 * @param enabled whether traces are exported
 * @param properties the SDK autoconfiguration properties, which win over the process environment
 * @param resource extra resource attributes ({@code service.namespace}, {@code
 *     service.instance.id})
 */
record TracingSettings(
    boolean enabled, Map<String, String> properties, Map<String, String> resource) {

  /** Tracing off: no SDK is built and no interceptor installed. */
  static final TracingSettings OFF = new TracingSettings(false, Map.of(), Map.of());

  /** The reference's switch, {@code false} by default. */
  static final String ENABLED = "TRACING_ENABLED";

  /** The reference's service name, {@code RateLimit} by default. */
  static final String SERVICE_NAME = "TRACING_SERVICE_NAME";

  /** The reference's service namespace, empty (not set) by default. */
  static final String SERVICE_NAMESPACE = "TRACING_SERVICE_NAMESPACE";

  /** The reference's service instance id, a random version 4 UUID by default. */
  static final String SERVICE_INSTANCE_ID = "TRACING_SERVICE_INSTANCE_ID";

  /** The reference's sampling ratio of traces, from 0 to 1, 1 by default. */
  static final String SAMPLING_RATE = "TRACING_SAMPLING_RATE";

  /** The reference's OTLP protocol, {@code http} (default) or {@code grpc}. */
  static final String EXPORTER_PROTOCOL = "TRACING_EXPORTER_PROTOCOL";

  /** The reference's tracing variables, each honoured in the compatibility mode. */
  static final List<String> REFERENCE_VARIABLES =
      List.of(
          ENABLED,
          SERVICE_NAME,
          SERVICE_NAMESPACE,
          SERVICE_INSTANCE_ID,
          SAMPLING_RATE,
          EXPORTER_PROTOCOL);

  /**
   * The OTLP protocol of a Weir-mode node whose {@code OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL} is
   * unset: the specification's default, which the SDK's autoconfigure ({@code grpc}) is not.
   */
  static final String DEFAULT_PROTOCOL = "http/protobuf";

  /**
   * The most characters of a span attribute's value (of each string of an array) unless {@code
   * OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT} or {@code OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT} says
   * otherwise: values a client chooses (an Envoy domain, native names) are cut to it, so that a
   * span waiting for export holds at most this much of each, not a whole gRPC message's (the SDK
   * itself has no limit). A name within {@code WEIR_MAX_NAME_LENGTH}'s default is never cut.
   */
  static final int SPAN_ATTRIBUTE_VALUE_LENGTH = 1024;

  /** The service name of a Weir-mode node whose OTEL_SERVICE_NAME and resource set none. */
  static final String DEFAULT_SERVICE_NAME = "weir";

  /**
   * Returns the Weir-mode settings from the standard {@code OTEL_*} variables of {@code env}: on
   * when {@code OTEL_TRACES_EXPORTER} is other than {@code none} alone, or {@code
   * OTEL_EXPORTER_OTLP_ENDPOINT} or {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT} is set, and {@code
   * OTEL_SDK_DISABLED} is not {@code true}; every other {@code OTEL_*} variable keeps its standard
   * meaning.
   */
  static TracingSettings fromOtel(Map<String, String> env) {
    String exporter = value(env, "OTEL_TRACES_EXPORTER");
    List<String> exporters = exporter == null ? List.of() : exporters(exporter);
    boolean configured =
        (exporter != null && !(exporters.size() == 1 && exporters.get(0).equalsIgnoreCase("none")))
            || value(env, "OTEL_EXPORTER_OTLP_ENDPOINT") != null
            || value(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != null;
    if (!configured || "true".equalsIgnoreCase(value(env, "OTEL_SDK_DISABLED"))) {
      return OFF;
    }
    Map<String, String> properties = new LinkedHashMap<>();
    String attributes = value(env, "OTEL_RESOURCE_ATTRIBUTES");
    if (attributes == null || !attributes.contains("service.name=")) {
      properties.put("otel.service.name", DEFAULT_SERVICE_NAME);
    }
    properties.putAll(otelProperties(env));
    // The SDK's autoconfigure defaults to grpc; the OpenTelemetry specification, and Weir's
    // documentation, to http/protobuf (an endpoint on port 4318).
    if (!properties.containsKey("otel.exporter.otlp.protocol")
        && !properties.containsKey("otel.exporter.otlp.traces.protocol")) {
      properties.put("otel.exporter.otlp.protocol", DEFAULT_PROTOCOL);
    }
    tracesOnly(properties);
    return new TracingSettings(true, Map.copyOf(properties), Map.of());
  }

  /**
   * Returns the compatibility-mode settings from the reference's variables of {@code env}: on with
   * {@code TRACING_ENABLED=true}; the OTLP exporter speaks {@code TRACING_EXPORTER_PROTOCOL} to
   * where the standard {@code OTEL_EXPORTER_OTLP_*} variables say (an endpoint without a scheme,
   * as the reference's Go exporter accepts, is taken as {@code http://}); a share {@code
   * TRACING_SAMPLING_RATE} of traces is sampled, whatever the caller decided, as the reference
   * does. A bad value throws {@link dev.weir.core.config.ConfigException} naming it.
   */
  static TracingSettings fromReference(Map<String, String> env) {
    EnvReader reader = new EnvReader(env);
    if (!reader.bool(EnvVar.of(ENABLED), false)) {
      return OFF;
    }
    String protocol = reader.oneOf(EnvVar.of(EXPORTER_PROTOCOL), "http", List.of("http", "grpc"));
    double rate = reader.ratio(EnvVar.of(SAMPLING_RATE), 1);
    String otelName = value(env, "OTEL_SERVICE_NAME");
    String serviceName =
        reader.string(EnvVar.of(SERVICE_NAME), otelName != null ? otelName : "RateLimit");
    Map<String, String> properties = new LinkedHashMap<>(otelProperties(env));
    for (String endpoint :
        List.of("otel.exporter.otlp.endpoint", "otel.exporter.otlp.traces.endpoint")) {
      String value = properties.get(endpoint);
      if (value != null && !value.contains("://")) {
        properties.put(endpoint, "http://" + value);
      }
    }
    String otlpProtocol = protocol.equals("grpc") ? "grpc" : "http/protobuf";
    properties.put("otel.exporter.otlp.protocol", otlpProtocol);
    properties.put("otel.exporter.otlp.traces.protocol", otlpProtocol);
    properties.put("otel.traces.exporter", "otlp");
    properties.put("otel.service.name", serviceName);
    properties.put("otel.traces.sampler", "traceidratio");
    properties.put("otel.traces.sampler.arg", Double.toString(rate));
    properties.put("otel.sdk.disabled", "false");
    tracesOnly(properties);
    Map<String, String> resource = new LinkedHashMap<>();
    String namespace = reader.string(EnvVar.of(SERVICE_NAMESPACE), "");
    if (!namespace.isEmpty()) {
      resource.put("service.namespace", namespace);
    }
    resource.put(
        "service.instance.id",
        reader.string(EnvVar.of(SERVICE_INSTANCE_ID), UUID.randomUUID().toString()));
    return new TracingSettings(true, Map.copyOf(properties), Map.copyOf(resource));
  }

  /** The samplers the SDK offers without an extension, for {@code OTEL_TRACES_SAMPLER}. */
  static final List<String> SAMPLERS =
      List.of(
          "always_on",
          "always_off",
          "traceidratio",
          "parentbased_always_on",
          "parentbased_always_off",
          "parentbased_traceidratio");

  /** The trace exporters this build has, for {@code OTEL_TRACES_EXPORTER}. */
  static final List<String> EXPORTERS = List.of("otlp", "none");

  /** The OTLP protocols the SDK speaks, for {@code OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL}. */
  static final List<String> PROTOCOLS = List.of("grpc", "http/protobuf");

  /**
   * Checks the values of {@link #properties} that Weir knows the allowed values of: the sampler,
   * the exporters, the OTLP protocol, that the OTLP endpoint is a URL and that the span limits are
   * whole numbers of 0 or more, the batch span processor's sizes whole numbers of 1 or more and
   * its durations 0 or more. Of the protocol and the endpoint only the value the trace exporter
   * uses is checked: the traces-specific one when set, else the general one.
   *
   * @throws ConfigException naming the {@code OTEL_*} variable, its value and what is allowed
   */
  void check() {
    String sampler = properties.get("otel.traces.sampler");
    if (sampler != null && !SAMPLERS.contains(sampler)) {
      throw ConfigException.invalid(
          variable("otel.traces.sampler"), sampler, "one of " + String.join(", ", SAMPLERS));
    }
    String exporters = properties.get("otel.traces.exporter");
    if (exporters != null) {
      for (String exporter : exporters(exporters)) {
        if (!EXPORTERS.contains(exporter)) {
          throw ConfigException.invalid(
              variable("otel.traces.exporter"), exporters, String.join(" or ", EXPORTERS));
        }
      }
    }
    String protocolKey = tracesKey("protocol");
    String protocol = properties.get(protocolKey);
    if (protocol != null && !PROTOCOLS.contains(protocol)) {
      throw ConfigException.invalid(
          variable(protocolKey), protocol, String.join(" or ", PROTOCOLS));
    }
    String endpointKey = tracesKey("endpoint");
    String endpoint = properties.get(endpointKey);
    if (endpoint != null
        && !endpoint.regionMatches(true, 0, "http://", 0, 7)
        && !endpoint.regionMatches(true, 0, "https://", 0, 8)) {
      throw ConfigException.invalid(
          variable(endpointKey), endpoint, "a URL starting with http:// or https://");
    }
    checkWholeNumbers(LIMITS, 0);
    checkWholeNumbers(BATCH_SIZES, 1);
    for (String key : BATCH_DURATIONS) {
      String duration = properties.get(key);
      if (duration != null && !DURATION.matcher(duration).matches()) {
        throw ConfigException.invalid(
            variable(key),
            duration,
            "a duration, 0 or more: a whole number of milliseconds, or one followed by ns, us,"
                + " ms, s, m, h or d, e.g. 5000 or 5s");
      }
    }
  }

  /**
   * The SDK properties of span limits (the most characters of an attribute's value, the most
   * attributes, events and links), which it reads as an {@code int} and refuses below 0 without
   * naming them. {@code otel.event.attribute.count.limit} and {@code
   * otel.link.attribute.count.limit} are not among them: the Java SDK does not read them (the
   * attributes of an event or a link are counted against {@code otel.attribute.count.limit}), so it
   * accepts any value of theirs, {@code -1} too.
   */
  static final List<String> LIMITS =
      List.of(
          "otel.span.attribute.value.length.limit",
          "otel.attribute.value.length.limit",
          "otel.span.attribute.count.limit",
          "otel.attribute.count.limit",
          "otel.span.event.count.limit",
          "otel.span.link.count.limit");

  /**
   * The SDK properties of the batch span processor's queue and batch sizes, which it reads as an
   * {@code int} and refuses below 1 without naming them.
   */
  static final List<String> BATCH_SIZES =
      List.of("otel.bsp.max.queue.size", "otel.bsp.max.export.batch.size");

  /**
   * The SDK properties of the batch span processor's durations, which it refuses below 0 without
   * naming them.
   */
  static final List<String> BATCH_DURATIONS =
      List.of("otel.bsp.schedule.delay", "otel.bsp.export.timeout");

  /**
   * A duration as the SDK reads it, 0 or more: a whole number, milliseconds without a unit, then
   * optionally one of its units.
   */
  private static final Pattern DURATION =
      Pattern.compile("\\s*\\+?\\d{1,18}\\s*(ns|us|ms|s|m|h|d)?\\s*");

  /**
   * Checks that each of {@code keys} that is set is an {@code int} of {@code least} or more, as the
   * SDK reads it.
   *
   * @throws ConfigException naming the {@code OTEL_*} variable, its value and what is allowed
   */
  private void checkWholeNumbers(List<String> keys, int least) {
    for (String key : keys) {
      String value = properties.get(key);
      if (value != null && !isWholeNumberFrom(value, least)) {
        throw ConfigException.invalid(
            variable(key), value, "a whole number, " + least + " or more");
      }
    }
  }

  /** Returns whether {@code value} is an {@code int} of {@code least} or more, as the SDK reads. */
  private static boolean isWholeNumberFrom(String value, int least) {
    try {
      return Integer.parseInt(value) >= least;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  /**
   * Returns the OTLP property {@code setting} the SDK's trace exporter uses: {@code
   * otel.exporter.otlp.traces.<setting>} when set, else the general {@code
   * otel.exporter.otlp.<setting>}, which it replaces.
   */
  private String tracesKey(String setting) {
    String traces = "otel.exporter.otlp.traces." + setting;
    return properties.containsKey(traces) ? traces : "otel.exporter.otlp." + setting;
  }

  /**
   * Returns the exporter names of an {@code OTEL_TRACES_EXPORTER} value as the SDK reads them:
   * split at commas, trimmed, empty items and repeats dropped.
   */
  static List<String> exporters(String value) {
    return Arrays.stream(value.split(","))
        .map(String::trim)
        .filter(e -> !e.isEmpty())
        .distinct()
        .toList();
  }

  /** Returns the {@code OTEL_*} variable of the SDK property {@code key}, such as {@code otel.a.b}. */
  static String variable(String key) {
    return key.toUpperCase(Locale.ROOT).replace('.', '_');
  }

  /** Returns what the start-up line says of tracing. */
  String describe() {
    if (!enabled) {
      return "off";
    }
    return properties.getOrDefault("otel.traces.exporter", "otlp")
        + " "
        + properties.getOrDefault(
            "otel.exporter.otlp.traces.protocol",
            properties.getOrDefault("otel.exporter.otlp.protocol", DEFAULT_PROTOCOL))
        + " to "
        + properties.getOrDefault(
            "otel.exporter.otlp.traces.endpoint",
            properties.getOrDefault("otel.exporter.otlp.endpoint", "the default endpoint"));
  }

  /** Returns each {@code OTEL_*} variable of {@code env} as its {@code otel.*} property. */
  private static Map<String, String> otelProperties(Map<String, String> env) {
    Map<String, String> out = new LinkedHashMap<>();
    env.forEach(
        (name, value) -> {
          if (name.startsWith("OTEL_") && value != null && !value.isBlank()) {
            out.put(name.toLowerCase(Locale.ROOT).replace('_', '.'), value.trim());
          }
        });
    return out;
  }

  /**
   * Sets the metrics and logs exporters to none: Weir exports only traces over OTLP; and bounds
   * span attribute values at {@link #SPAN_ATTRIBUTE_VALUE_LENGTH} unless a limit is given.
   */
  private static void tracesOnly(Map<String, String> properties) {
    properties.put("otel.metrics.exporter", "none");
    properties.put("otel.logs.exporter", "none");
    if (!properties.containsKey("otel.span.attribute.value.length.limit")
        && !properties.containsKey("otel.attribute.value.length.limit")) {
      properties.put(
          "otel.span.attribute.value.length.limit", Integer.toString(SPAN_ATTRIBUTE_VALUE_LENGTH));
    }
  }

  private static String value(Map<String, String> env, String name) {
    String value = env.get(name);
    return value == null || value.isBlank() ? null : value.trim();
  }
}
