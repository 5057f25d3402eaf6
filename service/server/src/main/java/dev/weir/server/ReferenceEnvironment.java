package dev.weir.server;

import dev.weir.core.config.EnvVar;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.xds.XdsSettings;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.UnaryOperator;

/**
 * envoyproxy/ratelimit's environment variables (its {@code src/settings/settings.go}) as Weir's
 * compatibility mode ({@code weir.jar ratelimit}) reads them: the ones it honours, under the name
 * of the Weir setting each stands for where there is one, and the ones it ignores, each with the
 * reason, named in one start-up notice when set.
 */
final class ReferenceEnvironment {

  private ReferenceEnvironment() {}

  /** The Envoy adapter's and xDS client's {@code WEIR_*} names mapped to the reference's. */
  private static final Map<String, String> ENVOY_NAMES =
      Map.ofEntries(
          Map.entry(EnvoySettings.CONFIG_SOURCE.name(), "CONFIG_TYPE"),
          Map.entry(EnvoySettings.MERGE_DOMAIN_CONFIG.name(), "MERGE_DOMAIN_CONFIG"),
          Map.entry(EnvoySettings.SHADOW_MODE.name(), "SHADOW_MODE"),
          Map.entry(
              EnvoySettings.LIMIT_RESPONSE_HEADERS_ENABLED.name(),
              "LIMIT_RESPONSE_HEADERS_ENABLED"),
          Map.entry(EnvoySettings.LIMIT_LIMIT_HEADER.name(), "LIMIT_LIMIT_HEADER"),
          Map.entry(EnvoySettings.LIMIT_REMAINING_HEADER.name(), "LIMIT_REMAINING_HEADER"),
          Map.entry(EnvoySettings.LIMIT_RESET_HEADER.name(), "LIMIT_RESET_HEADER"),
          Map.entry(
              EnvoySettings.STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT.name(),
              "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT"),
          Map.entry(EnvoySettings.NEAR_LIMIT_RATIO.name(), "NEAR_LIMIT_RATIO"),
          Map.entry(
              EnvoySettings.FORCE_START_WITHOUT_INITIAL_CONFIG.name(),
              "FORCE_START_WITHOUT_INITIAL_CONFIG"),
          Map.entry(EnvoySettings.QUOTA_MODE.name(), "QUOTA_MODE"),
          Map.entry(EnvoySettings.RESPONSE_DYNAMIC_METADATA.name(), "RESPONSE_DYNAMIC_METADATA"),
          Map.entry(XdsSettings.SERVER_URL.name(), "CONFIG_GRPC_XDS_SERVER_URL"),
          Map.entry(XdsSettings.NODE_ID.name(), "CONFIG_GRPC_XDS_NODE_ID"),
          Map.entry(XdsSettings.NODE_METADATA.name(), "CONFIG_GRPC_XDS_NODE_METADATA"),
          Map.entry(
              XdsSettings.ADDITIONAL_HEADERS.name(), "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS"),
          Map.entry(
              XdsSettings.CONNECT_RETRY_INTERVAL.name(),
              "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL"),
          Map.entry(XdsSettings.BACKOFF_MAX_INTERVAL.name(), "XDS_CLIENT_BACKOFF_MAX_INTERVAL"),
          Map.entry(XdsSettings.BACKOFF_RANDOM_FACTOR.name(), "XDS_CLIENT_BACKOFF_RANDOM_FACTOR"),
          Map.entry(XdsSettings.BACKOFF_JITTER.name(), "XDS_CLIENT_BACKOFF_JITTER"),
          Map.entry(XdsSettings.MAX_MSG_SIZE.name(), "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES"),
          Map.entry(XdsSettings.SERVER_USE_TLS.name(), "CONFIG_GRPC_XDS_SERVER_USE_TLS"),
          Map.entry(XdsSettings.CLIENT_TLS_CERT.name(), "CONFIG_GRPC_XDS_CLIENT_TLS_CERT"),
          Map.entry(XdsSettings.CLIENT_TLS_KEY.name(), "CONFIG_GRPC_XDS_CLIENT_TLS_KEY"),
          Map.entry(XdsSettings.SERVER_TLS_CACERT.name(), "CONFIG_GRPC_XDS_SERVER_TLS_CACERT"),
          Map.entry(XdsSettings.SERVER_TLS_SAN.name(), "CONFIG_GRPC_XDS_SERVER_TLS_SAN"));

  /**
   * Names each Envoy adapter and xDS variable by the reference's name, the {@code WEIR_*} name
   * accepted as well (the reference's wins when both are set); Weir's extensions keep their names.
   */
  static final UnaryOperator<EnvVar> ENVOY =
      var -> {
        String reference = ENVOY_NAMES.get(var.name());
        return reference == null ? var : EnvVar.of(reference, var.name());
      };

  /** The reference's variables the compatibility mode reads itself (the rest map to Weir's). */
  static final Set<String> READ =
      Set.of(
          "HOST",
          "PORT",
          "GRPC_HOST",
          "GRPC_PORT",
          "DEBUG_HOST",
          "DEBUG_PORT",
          "GRPC_MAX_CONNECTION_AGE",
          "GRPC_MAX_CONNECTION_AGE_GRACE",
          "GRPC_SERVER_USE_TLS",
          "GRPC_SERVER_TLS_CERT",
          "GRPC_SERVER_TLS_KEY",
          "GRPC_SERVER_TLS_CA_CERT",
          "GRPC_CLIENT_TLS_CACERT",
          "LOG_LEVEL",
          "LOG_FORMAT",
          "RUNTIME_ROOT",
          "RUNTIME_SUBDIRECTORY",
          "RUNTIME_APPDIRECTORY",
          "RUNTIME_IGNOREDOTFILES",
          "RUNTIME_WATCH_ROOT",
          "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED",
          "USE_STATSD",
          "STATSD_HOST",
          "STATSD_PORT",
          "EXTRA_TAGS",
          "STATS_FLUSH_INTERVAL",
          "DISABLE_STATS",
          "USE_PROMETHEUS",
          "PROMETHEUS_ADDR",
          "PROMETHEUS_PATH",
          "TRACING_ENABLED",
          "TRACING_SERVICE_NAME",
          "TRACING_SERVICE_NAMESPACE",
          "TRACING_SERVICE_INSTANCE_ID",
          "TRACING_SAMPLING_RATE",
          "TRACING_EXPORTER_PROTOCOL");

  /** Returns every reference variable the compatibility mode honours. */
  static Set<String> honoured() {
    Set<String> all = new TreeSet<>(READ);
    all.addAll(ENVOY_NAMES.values());
    return all;
  }

  /** The reference's variables Weir ignores, each with why. */
  static final Map<String, String> IGNORED =
      Map.ofEntries(
          Map.entry("GRPC_UDS", "Weir listens on GRPC_HOST:GRPC_PORT, not on a Unix socket"),
          Map.entry(
              "GRPC_CLIENT_TLS_SAN",
              "client certificates are checked against GRPC_SERVER_TLS_CA_CERT, not a name"),
          Map.entry(
              "CACHE_KEY_PREFIX", "Weir's counters live in its own cluster, not a shared store"),
          Map.entry("EXPIRATION_JITTER_MAX_SECONDS", "Weir's counters expire with their window"),
          Map.entry(
              "LOCAL_CACHE_SIZE_IN_BYTES",
              "every counter already lives in the memory of the node that owns it"),
          Map.entry("USE_DOG_STATSD", "stats are sent as plain StatsD lines"),
          Map.entry("USE_DOG_STATSD_MOGRIFIERS", "stats are sent as plain StatsD lines"),
          Map.entry(
              "PROMETHEUS_MAPPER_YAML",
              "PROMETHEUS_ADDR serves Weir's own meter names (weir_envoy_rate_limit_*); the"
                  + " reference's names come over StatsD"),
          Map.entry(
              "PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS",
              "PROMETHEUS_ADDR serves Weir's own meters, not the reference's response-time"
                  + " histogram"),
          Map.entry(
              "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL",
              "the first reconnect waits CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL"));

  /** Returns whether {@code name} configures the reference's Redis or Memcache backend. */
  static boolean isBackend(String name) {
    return name.equals("BACKEND_TYPE") || name.startsWith("REDIS_") || name.startsWith("MEMCACHE_");
  }

  /**
   * Returns the start-up notice for {@code env}: one line naming every ignored variable that is
   * set, with its reason, and one naming every backend variable that is set; empty lines are left
   * out. {@code RUNTIME_IGNOREDOTFILES=false} is reported because names starting with {@code .} are
   * skipped anyway.
   */
  static List<String> notice(Map<String, String> env) {
    Map<String, String> ignored = new LinkedHashMap<>();
    Set<String> backend = new TreeSet<>();
    new TreeSet<>(env.keySet())
        .forEach(
            name -> {
              String value = env.get(name);
              if (value == null || value.isBlank()) {
                return;
              }
              if (isBackend(name)) {
                backend.add(name);
              } else if (IGNORED.containsKey(name)) {
                ignored.put(name, IGNORED.get(name));
              } else if (name.equals("RUNTIME_IGNOREDOTFILES")
                  && List.of("0", "f", "false").contains(value.trim().toLowerCase())) {
                ignored.put(name + "=false", "names starting with '.' are always skipped");
              }
            });
    List<String> lines = new ArrayList<>();
    if (!ignored.isEmpty()) {
      List<String> parts = new ArrayList<>();
      ignored.forEach((name, why) -> parts.add(name + " (" + why + ")"));
      lines.add("envoyproxy/ratelimit settings Weir ignores: " + String.join("; ", parts));
    }
    if (!backend.isEmpty()) {
      lines.add(
          "Weir keeps counters in its own cluster, not in Redis or Memcache: ignoring "
              + String.join(", ", backend));
    }
    return lines;
  }
}
