package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReferenceEnvironmentTest {

  /**
   * Every variable of envoyproxy/ratelimit's src/settings/settings.go at f2fb157, plus the
   * REDIS_*USE_EXPLICIT_PIPELINE variables of earlier releases.
   */
  static final List<String> SETTINGS_GO =
      List.of(
          "HOST", "PORT", "DEBUG_HOST", "DEBUG_PORT", "GRPC_UDS", "GRPC_HOST", "GRPC_PORT",
          "GRPC_MAX_CONNECTION_AGE", "GRPC_MAX_CONNECTION_AGE_GRACE", "GRPC_SERVER_USE_TLS",
          "GRPC_SERVER_TLS_CERT", "GRPC_SERVER_TLS_KEY", "GRPC_CLIENT_TLS_CACERT",
          "GRPC_CLIENT_TLS_SAN", "LOG_LEVEL", "LOG_FORMAT", "CONFIG_TYPE",
          "FORCE_START_WITHOUT_INITIAL_CONFIG", "CONFIG_GRPC_XDS_NODE_ID",
          "CONFIG_GRPC_XDS_NODE_METADATA", "CONFIG_GRPC_XDS_SERVER_URL",
          "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL",
          "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", "CONFIG_GRPC_XDS_SERVER_USE_TLS",
          "CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "CONFIG_GRPC_XDS_CLIENT_TLS_KEY",
          "CONFIG_GRPC_XDS_SERVER_TLS_CACERT", "CONFIG_GRPC_XDS_SERVER_TLS_SAN",
          "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", "XDS_CLIENT_BACKOFF_MAX_INTERVAL",
          "XDS_CLIENT_BACKOFF_RANDOM_FACTOR", "XDS_CLIENT_BACKOFF_JITTER",
          "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", "USE_DOG_STATSD", "USE_DOG_STATSD_MOGRIFIERS",
          "USE_STATSD", "STATSD_HOST", "STATSD_PORT", "EXTRA_TAGS", "STATS_FLUSH_INTERVAL",
          "DISABLE_STATS", "USE_PROMETHEUS", "PROMETHEUS_ADDR", "PROMETHEUS_PATH",
          "PROMETHEUS_MAPPER_YAML", "PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS", "RUNTIME_ROOT", "RUNTIME_SUBDIRECTORY",
          "RUNTIME_APPDIRECTORY", "RUNTIME_IGNOREDOTFILES", "RUNTIME_WATCH_ROOT",
          "EXPIRATION_JITTER_MAX_SECONDS", "LOCAL_CACHE_SIZE_IN_BYTES", "NEAR_LIMIT_RATIO",
          "CACHE_KEY_PREFIX", "BACKEND_TYPE", "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT",
          "LIMIT_RESPONSE_HEADERS_ENABLED", "LIMIT_LIMIT_HEADER", "LIMIT_REMAINING_HEADER",
          "LIMIT_RESET_HEADER", "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "REDIS_SOCKET_TYPE",
          "REDIS_TYPE", "REDIS_URL", "REDIS_POOL_SIZE", "REDIS_AUTH", "REDIS_TLS",
          "REDIS_TLS_CLIENT_CERT", "REDIS_TLS_CLIENT_KEY", "REDIS_TLS_CACERT",
          "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", "REDIS_PIPELINE_WINDOW", "REDIS_PIPELINE_LIMIT",
          "REDIS_USE_EXPLICIT_PIPELINE", "REDIS_PERSECOND", "REDIS_PERSECOND_SOCKET_TYPE",
          "REDIS_PERSECOND_TYPE", "REDIS_PERSECOND_URL", "REDIS_PERSECOND_POOL_SIZE",
          "REDIS_PERSECOND_AUTH", "REDIS_PERSECOND_TLS", "REDIS_SENTINEL_AUTH",
          "REDIS_PERSECOND_SENTINEL_AUTH", "REDIS_PERSECOND_PIPELINE_WINDOW",
          "REDIS_PERSECOND_PIPELINE_LIMIT", "REDIS_PERSECOND_USE_EXPLICIT_PIPELINE",
          "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", "REDIS_TIMEOUT", "REDIS_PERSECOND_TIMEOUT",
          "REDIS_POOL_ON_EMPTY_BEHAVIOR", "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR",
          "REDIS_CLUSTER_PIPELINE_PARALLELISM", "REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM",
          "REDIS_STARTUP_INITIAL_INTERVAL", "REDIS_STARTUP_MAX_INTERVAL",
          "REDIS_STARTUP_MAX_ELAPSED_TIME",
          "MEMCACHE_HOST_PORT", "MEMCACHE_MAX_IDLE_CONNS", "MEMCACHE_SRV", "MEMCACHE_SRV_REFRESH",
          "MEMCACHE_TLS", "MEMCACHE_TLS_CLIENT_CERT", "MEMCACHE_TLS_CLIENT_KEY",
          "MEMCACHE_TLS_CACERT", "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION", "SHADOW_MODE",
          "RESPONSE_DYNAMIC_METADATA", "MERGE_DOMAIN_CONFIG", "TRACING_ENABLED",
          "TRACING_SERVICE_NAME", "TRACING_SERVICE_NAMESPACE", "TRACING_SERVICE_INSTANCE_ID",
          "TRACING_EXPORTER_PROTOCOL", "TRACING_SAMPLING_RATE", "QUOTA_MODE");

  @Test
  void everyReferenceSetting_isHonouredOrIgnoredWithAReason() {
    assertThat(SETTINGS_GO)
        .allSatisfy(
            name ->
                assertThat(
                        ReferenceEnvironment.honoured().contains(name)
                            || ReferenceEnvironment.IGNORED.containsKey(name)
                            || ReferenceEnvironment.isBackend(name))
                    .as(name)
                    .isTrue());
    assertThat(ReferenceEnvironment.honoured())
        .doesNotContainAnyElementsOf(ReferenceEnvironment.IGNORED.keySet());
  }

  @Test
  void notice_prometheusResponseTimeAsMilliseconds_namedWithItsReason() {
    assertThat(
            ReferenceEnvironment.notice(Map.of("PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS", "true")))
        .containsExactly(
            "envoyproxy/ratelimit settings Weir ignores: PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS"
                + " (PROMETHEUS_ADDR serves Weir's own meters, not the reference's response-time"
                + " histogram)");
  }

  @Test
  void notice_envoyGatewayEnvironment_onlyTheRedisLine() {
    assertThat(ReferenceEnvironment.notice(RatelimitSettingsTest.ENVOY_GATEWAY))
        .containsExactly(
            "Weir keeps counters in its own cluster, not in Redis or Memcache: ignoring"
                + " REDIS_SOCKET_TYPE, REDIS_URL");
  }

  @Test
  void notice_ignoredSettings_namedWithTheirReasonInOneLine() {
    assertThat(
            ReferenceEnvironment.notice(
                Map.of(
                    "TRACING_ENABLED", "true",
                    "GRPC_UDS", "/tmp/rl.sock",
                    "USE_DOG_STATSD", "true",
                    "RUNTIME_IGNOREDOTFILES", "false",
                    "BACKEND_TYPE", "memcache",
                    "MEMCACHE_HOST_PORT", "m:11211",
                    "CACHE_KEY_PREFIX", "")))
        .containsExactly(
            "envoyproxy/ratelimit settings Weir ignores: GRPC_UDS (Weir listens on"
                + " GRPC_HOST:GRPC_PORT, not on a Unix socket); RUNTIME_IGNOREDOTFILES=false (names"
                + " starting with '.' are always skipped); USE_DOG_STATSD (stats are sent as plain"
                + " StatsD lines)",
            "Weir keeps counters in its own cluster, not in Redis or Memcache: ignoring"
                + " BACKEND_TYPE, MEMCACHE_HOST_PORT");
  }
}
