package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.HostPort;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DescriptorConfigException;
import dev.weir.tls.ClientAuth;
import dev.weir.tls.TlsSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class RatelimitSettingsTest {

  /** The environment of Envoy Gateway's default rate-limit Deployment. */
  static final Map<String, String> ENVOY_GATEWAY =
      Map.ofEntries(
          Map.entry("RUNTIME_ROOT", "/data"),
          Map.entry("RUNTIME_SUBDIRECTORY", "ratelimit"),
          Map.entry("RUNTIME_IGNOREDOTFILES", "true"),
          Map.entry("RUNTIME_WATCH_ROOT", "false"),
          Map.entry("LOG_LEVEL", "info"),
          Map.entry("USE_STATSD", "true"),
          Map.entry("STATSD_PORT", "9125"),
          Map.entry("CONFIG_TYPE", "GRPC_XDS_SOTW"),
          Map.entry("CONFIG_GRPC_XDS_SERVER_URL", "envoy-gateway:18001"),
          Map.entry("CONFIG_GRPC_XDS_NODE_ID", "envoy-ratelimit"),
          Map.entry("GRPC_SERVER_USE_TLS", "true"),
          Map.entry("GRPC_SERVER_TLS_CERT", "/certs/tls.crt"),
          Map.entry("GRPC_SERVER_TLS_KEY", "/certs/tls.key"),
          Map.entry("GRPC_SERVER_TLS_CA_CERT", "/certs/ca.crt"),
          Map.entry("CONFIG_GRPC_XDS_SERVER_USE_TLS", "true"),
          Map.entry("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "/certs/tls.crt"),
          Map.entry("CONFIG_GRPC_XDS_CLIENT_TLS_KEY", "/certs/tls.key"),
          Map.entry("CONFIG_GRPC_XDS_SERVER_TLS_CACERT", "/certs/ca.crt"),
          Map.entry("FORCE_START_WITHOUT_INITIAL_CONFIG", "true"),
          Map.entry("REDIS_SOCKET_TYPE", "tcp"),
          Map.entry("REDIS_URL", "redis.redis.svc:6379"));

  @Test
  void from_nothingSet_theReferenceDefaults() {
    RatelimitSettings settings = RatelimitSettings.from(Map.of());

    assertThat(settings.grpcAddress()).isEqualTo(new HostPort("0.0.0.0", 8081));
    assertThat(settings.httpAddress()).isEqualTo(new HostPort("0.0.0.0", 8080));
    assertThat(settings.debugAddress()).isEqualTo(new HostPort("0.0.0.0", 6070));
    assertThat(settings.logLevel()).isEqualTo("warn");
    assertThat(settings.logFormat()).isEqualTo(LogSetup.Format.TEXT);
    assertThat(settings.grpcTls()).isEqualTo(TlsSettings.DISABLED);
    assertThat(settings.maxConnectionAge()).isEqualTo(Duration.ofHours(24));
    assertThat(settings.maxConnectionAgeGrace()).isEqualTo(Duration.ofHours(1));
    assertThat(settings.envoy().source()).isEqualTo(EnvoySettings.Source.FILE);
    assertThat(settings.envoy().config()).contains(Path.of("/srv/runtime_data/current"));
    assertThat(settings.envoy().configKeyPrefix()).isEqualTo("config.");
    assertThat(settings.envoy().forceStartWithoutInitialConfig()).isFalse();
    assertThat(settings.healthyOnlyWithConfig()).isFalse();
    assertThat(settings.statsd())
        .contains(new RatelimitSettings.Statsd("localhost", 8125, Duration.ofSeconds(10), Map.of()));
    assertThat(settings.prometheus()).isEmpty();
  }

  @Test
  void from_duplicateDomain_refusalNamesTheReferenceMergeVariable() {
    EnvoySettings envoy = RatelimitSettings.from(Map.of()).envoy();
    String yaml = "domain: shop\ndescriptors:\n  - key: a\n";
    List<ConfigFile> files =
        List.of(new ConfigFile("a.yaml", yaml), new ConfigFile("b.yaml", yaml));

    assertThat(envoy.loadOptions().mergeVariable()).isEqualTo("MERGE_DOMAIN_CONFIG");
    assertThatThrownBy(() -> new ConfigLoader(envoy.loadOptions()).compile(files))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .singleElement()
                    .asString()
                    .endsWith(" descriptors are merged, with MERGE_DOMAIN_CONFIG=true"));
  }

  @Test
  void from_envoyGateway_xdsWithMutualTlsOnBothSidesAndStatsdOn9125() {
    RatelimitSettings settings = RatelimitSettings.from(ENVOY_GATEWAY);

    assertThat(settings.logLevel()).isEqualTo("info");
    assertThat(settings.envoy().source()).isEqualTo(EnvoySettings.Source.XDS);
    assertThat(settings.envoy().forceStartWithoutInitialConfig()).isTrue();
    assertThat(settings.envoy().xds().serverAddress()).hasToString("envoy-gateway:18001");
    assertThat(settings.envoy().xds().nodeId()).isEqualTo("envoy-ratelimit");
    assertThat(settings.envoy().xds().useTls()).isTrue();
    assertThat(settings.envoy().xds().clientCert()).contains(Path.of("/certs/tls.crt"));
    assertThat(settings.envoy().xds().caCert()).contains(Path.of("/certs/ca.crt"));
    assertThat(settings.grpcTls().cert()).contains(Path.of("/certs/tls.crt"));
    assertThat(settings.grpcTls().ca()).contains(Path.of("/certs/ca.crt"));
    assertThat(settings.grpcTls().clientAuth()).isEqualTo(ClientAuth.REQUIRE_AND_VERIFY);
    assertThat(settings.statsd().orElseThrow().port()).isEqualTo(9125);
  }

  @Test
  void from_fileSource_readsTheAppDirectoryKeysBelowRootSubdirectory() {
    RatelimitSettings settings =
        RatelimitSettings.from(
            Map.of(
                "RUNTIME_ROOT", "/data",
                "RUNTIME_SUBDIRECTORY", "ratelimit",
                "RUNTIME_APPDIRECTORY", "rules"));

    assertThat(settings.envoy().config()).contains(Path.of("/data/ratelimit"));
    assertThat(settings.envoy().configKeyPrefix()).isEqualTo("rules.");
  }

  @Test
  void from_fileSourceWithoutWatchRoot_readsRootSubdirectoryAndAppDirectory() {
    RatelimitSettings settings =
        RatelimitSettings.from(
            Map.of(
                "RUNTIME_ROOT", "/data",
                "RUNTIME_SUBDIRECTORY", "ratelimit",
                "RUNTIME_APPDIRECTORY", "rules",
                "RUNTIME_WATCH_ROOT", "false"));

    assertThat(settings.envoy().config()).contains(Path.of("/data/ratelimit/rules"));
    assertThat(settings.envoy().configKeyPrefix()).isEmpty();
  }

  @Test
  void from_behaviourSettings_underTheReferenceNamesWithWeirNamesAccepted() {
    RatelimitSettings settings =
        RatelimitSettings.from(
            Map.ofEntries(
                Map.entry("SHADOW_MODE", "true"),
                Map.entry("LIMIT_RESPONSE_HEADERS_ENABLED", "true"),
                Map.entry("LIMIT_RESET_HEADER", "X-Reset"),
                Map.entry("NEAR_LIMIT_RATIO", "0.5"),
                Map.entry("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "true"),
                Map.entry("MERGE_DOMAIN_CONFIG", "true"),
                Map.entry("RESPONSE_DYNAMIC_METADATA", "true"),
                Map.entry("QUOTA_MODE", "true"),
                Map.entry("WEIR_ENVOY_LIMIT_LIMIT_HEADER", "X-Limit"),
                Map.entry("WEIR_ENVOY_DEFAULT_ALGORITHM", "token_bucket"),
                Map.entry("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "true"),
                Map.entry("LOG_FORMAT", "json"),
                Map.entry("LOG_LEVEL", "DEBUG"),
                Map.entry("EXTRA_TAGS", "env:prod,zone:a"),
                Map.entry("STATS_FLUSH_INTERVAL", "1s"),
                Map.entry("USE_PROMETHEUS", "true"),
                Map.entry("PROMETHEUS_ADDR", ":19001")));

    EnvoySettings envoy = settings.envoy();
    assertThat(envoy.shadowMode()).isTrue();
    assertThat(envoy.responseHeadersEnabled()).isTrue();
    assertThat(envoy.resetHeader()).isEqualTo("X-Reset");
    assertThat(envoy.limitHeader()).isEqualTo("X-Limit");
    assertThat(envoy.nearLimitRatio()).isEqualTo(0.5);
    assertThat(envoy.stopCacheKeyIncrementWhenOverlimit()).isTrue();
    assertThat(envoy.mergeDomainConfig()).isTrue();
    assertThat(envoy.responseDynamicMetadata()).isTrue();
    assertThat(envoy.quotaMode()).isTrue();
    assertThat(envoy.defaultAlgorithm()).isEqualTo(dev.weir.core.model.Algorithm.TOKEN_BUCKET);
    assertThat(settings.healthyOnlyWithConfig()).isTrue();
    assertThat(settings.logFormat()).isEqualTo(LogSetup.Format.JSON);
    assertThat(settings.logLevel()).isEqualTo("debug");
    assertThat(settings.statsd().orElseThrow().extraTags())
        .isEqualTo(Map.of("env", "prod", "zone", "a"));
    assertThat(settings.statsd().orElseThrow().flushInterval()).isEqualTo(Duration.ofSeconds(1));
    assertThat(settings.prometheus())
        .contains(new RatelimitSettings.Prometheus(new HostPort("", 19001), "/metrics"));
  }

  @Test
  void from_disableStats_turnsStatsdAndPrometheusOff() {
    RatelimitSettings settings =
        RatelimitSettings.from(Map.of("DISABLE_STATS", "true", "USE_PROMETHEUS", "true"));

    assertThat(settings.statsd()).isEmpty();
    assertThat(settings.prometheus()).isEqualTo(Optional.empty());
  }

  @Test
  void from_badValue_namesTheReferenceVariable() {
    assertThatThrownBy(() -> RatelimitSettings.from(Map.of("NEAR_LIMIT_RATIO", "2")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "NEAR_LIMIT_RATIO='2' is not valid: expected a number from 0 to 1, such as 0.8");
    assertThatThrownBy(() -> RatelimitSettings.from(Map.of("GRPC_PORT", "http")))
        .isInstanceOf(ConfigException.class)
        .hasMessage("GRPC_PORT='http' is not valid: expected a whole number from 0 to 65535");
    assertThatThrownBy(() -> RatelimitSettings.from(Map.of("CONFIG_TYPE", "REDIS")))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("CONFIG_TYPE='REDIS' is not valid");
  }

  @Test
  void from_logFormatInAnyCase_json() {
    assertThat(RatelimitSettings.from(Map.of("LOG_FORMAT", "JSON")).logFormat())
        .isEqualTo(LogSetup.Format.JSON);
    assertThat(RatelimitSettings.from(Map.of("LOG_FORMAT", "Text")).logFormat())
        .isEqualTo(LogSetup.Format.TEXT);
  }

  @Test
  void from_unknownLogFormat_refusedNamingLogFormat() {
    assertThatThrownBy(() -> RatelimitSettings.from(Map.of("LOG_FORMAT", "xml")))
        .isInstanceOf(ConfigException.class)
        .hasMessage("LOG_FORMAT='xml' is not valid: expected one of text, json");
  }

  @Test
  void from_tlsWithoutKey_namesTheMissingVariable() {
    assertThatThrownBy(
            () ->
                RatelimitSettings.from(
                    Map.of("GRPC_SERVER_USE_TLS", "true", "GRPC_SERVER_TLS_CERT", "/c.pem")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "GRPC_SERVER_USE_TLS=true needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY:"
                + " GRPC_SERVER_TLS_KEY is not set");
  }

  @Test
  void from_ipv6Hosts_withOrWithoutBrackets() {
    RatelimitSettings settings =
        RatelimitSettings.from(Map.of("HOST", "::", "GRPC_HOST", "[::1]"));

    assertThat(settings.httpAddress()).isEqualTo(new HostPort("::", 8080));
    assertThat(settings.grpcAddress()).isEqualTo(new HostPort("::1", 8081));
  }

  @Test
  void from_zoneScopedIpv6Hosts_withOrWithoutBrackets() {
    RatelimitSettings settings =
        RatelimitSettings.from(Map.of("HOST", "fe80::1%lo", "GRPC_HOST", "[fe80::1%lo]"));

    assertThat(settings.httpAddress()).isEqualTo(new HostPort("fe80::1%lo", 8080));
    assertThat(settings.grpcAddress()).isEqualTo(new HostPort("fe80::1%lo", 8081));
    assertThat(HostPort.parseSetting(settings.nodeEnvironment(Map.of()).get("WEIR_GRPC_ADDRESS")))
        .isEqualTo(new HostPort("fe80::1%lo", 8081));
  }

  @Test
  void from_ipv6HostWithABadZone_refusedNamingHost() {
    assertThatThrownBy(() -> RatelimitSettings.from(Map.of("HOST", "fe80::1%eth/0")))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("HOST='fe80::1%eth/0' is not valid: expected a host name");
  }

  @Test
  void from_debugHostWithAScheme_refusedNamingDebugHost() {
    assertThatThrownBy(() -> RatelimitSettings.from(Map.of("DEBUG_HOST", "http://localhost")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "DEBUG_HOST='http://localhost' is not valid: expected a host name or IPv4 address of"
                + " letters, digits, '.', '-' and '_', or an IPv6 address with or without a zone,"
                + " e.g. 0.0.0.0, :: or fe80::1%eth0");
  }
}
