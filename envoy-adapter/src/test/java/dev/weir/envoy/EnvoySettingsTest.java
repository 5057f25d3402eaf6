package dev.weir.envoy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostPort;
import dev.weir.core.model.Algorithm;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigLimits;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DescriptorConfigException;
import dev.weir.envoy.config.NoDomainLoaded;
import dev.weir.envoy.xds.XdsSettings;
import dev.weir.envoy.xds.XdsSettings.Backoff;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class EnvoySettingsTest {

  @Test
  void loadOptions_mergeVariableRenamed_duplicateDomainErrorNamesTheRenamedVariable() {
    EnvoySettings settings =
        EnvoySettings.from(
            new EnvReader(Map.of()),
            v ->
                v.equals(EnvoySettings.MERGE_DOMAIN_CONFIG) ? EnvVar.of("MERGE_DOMAIN_CONFIG") : v);
    String yaml = "domain: shop\ndescriptors:\n  - key: a\n";
    List<ConfigFile> files =
        List.of(new ConfigFile("a.yaml", yaml), new ConfigFile("b.yaml", yaml));

    assertThatThrownBy(() -> new ConfigLoader(settings.loadOptions()).compile(files))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .singleElement()
                    .asString()
                    .endsWith(" descriptors are merged, with MERGE_DOMAIN_CONFIG=true"));
  }

  @Test
  void fromEnvironment_nothingSet_referenceDefaults() {
    assertThat(EnvoySettings.fromEnvironment(Map.of()))
        .isEqualTo(
            new EnvoySettings(
                EnvoySettings.Source.FILE,
                Optional.empty(),
                XdsSettings.DEFAULTS,
                false,
                "WEIR_ENVOY_MERGE_DOMAIN_CONFIG",
                Algorithm.FIXED_WINDOW,
                false,
                false,
                "RateLimit-Limit",
                "RateLimit-Remaining",
                "RateLimit-Reset",
                EnvoySettings.HeadersFormat.TRIO,
                false,
                0.8,
                Duration.ofSeconds(1),
                false,
                new ConfigLimits(1_048_576, 16_777_216),
                false,
                false,
                NoDomainLoaded.Variables.WEIR,
                ""));
  }

  @Test
  void fromEnvironment_everyVariableSet_readsEach() {
    EnvoySettings settings =
        EnvoySettings.fromEnvironment(
            Map.ofEntries(
                Map.entry("WEIR_ENVOY_CONFIG", "/etc/weir/envoy"),
                Map.entry("WEIR_ENVOY_MERGE_DOMAIN_CONFIG", "true"),
                Map.entry("WEIR_ENVOY_DEFAULT_ALGORITHM", "Token_Bucket"),
                Map.entry("WEIR_ENVOY_SHADOW_MODE", "1"),
                Map.entry("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_ENABLED", "t"),
                Map.entry("WEIR_ENVOY_LIMIT_LIMIT_HEADER", "X-RateLimit-Limit"),
                Map.entry("WEIR_ENVOY_LIMIT_REMAINING_HEADER", "X-RateLimit-Remaining"),
                Map.entry("WEIR_ENVOY_LIMIT_RESET_HEADER", "X-RateLimit-Reset"),
                Map.entry("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_FORMAT", "IETF"),
                Map.entry("WEIR_ENVOY_STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", "TRUE"),
                Map.entry("WEIR_ENVOY_NEAR_LIMIT_RATIO", "0.5"),
                Map.entry("WEIR_ENVOY_CONFIG_RELOAD_INTERVAL", "250ms"),
                Map.entry("WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG", "true"),
                Map.entry("WEIR_ENVOY_CONFIG_MAX_FILE_SIZE", "65536"),
                Map.entry("WEIR_ENVOY_CONFIG_MAX_TOTAL_SIZE", "1048576"),
                Map.entry("WEIR_ENVOY_QUOTA_MODE", "true"),
                Map.entry("WEIR_ENVOY_RESPONSE_DYNAMIC_METADATA", "true")));

    assertThat(settings)
        .isEqualTo(
            new EnvoySettings(
                EnvoySettings.Source.FILE,
                Optional.of(Path.of("/etc/weir/envoy")),
                XdsSettings.DEFAULTS,
                true,
                "WEIR_ENVOY_MERGE_DOMAIN_CONFIG",
                Algorithm.TOKEN_BUCKET,
                true,
                true,
                "X-RateLimit-Limit",
                "X-RateLimit-Remaining",
                "X-RateLimit-Reset",
                EnvoySettings.HeadersFormat.IETF,
                true,
                0.5,
                Duration.ofMillis(250),
                true,
                new ConfigLimits(65_536, 1_048_576),
                true,
                true,
                NoDomainLoaded.Variables.WEIR,
                ""));
  }

  @Test
  void fromEnvironment_badRatio_namesVariableValueAndAllowed() {
    assertThatThrownBy(
            () -> EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_NEAR_LIMIT_RATIO", "1.5")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ENVOY_NEAR_LIMIT_RATIO='1.5' is not valid: expected a number from 0 to 1, such as"
                + " 0.8");
  }

  @Test
  void fromEnvironment_badAlgorithm_namesTheAllowedValues() {
    assertThatThrownBy(
            () -> EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_DEFAULT_ALGORITHM", "gcra")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_ENVOY_DEFAULT_ALGORITHM='gcra'")
        .hasMessageContaining("fixed_window, token_bucket, leaky_bucket, sliding_window");
  }

  @Test
  void fromEnvironment_badHeadersFormat_namesVariableValueAndAllowed() {
    assertThatThrownBy(
            () ->
                EnvoySettings.fromEnvironment(
                    Map.of("WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_FORMAT", "draft03")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ENVOY_LIMIT_RESPONSE_HEADERS_FORMAT='draft03' is not valid: expected one of"
                + " trio, ietf");
  }

  @Test
  void fromEnvironment_headerNameWithSpace_isRejected() {
    assertThatThrownBy(
            () ->
                EnvoySettings.fromEnvironment(
                    Map.of("WEIR_ENVOY_LIMIT_RESET_HEADER", "Rate Limit")))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("WEIR_ENVOY_LIMIT_RESET_HEADER='Rate Limit' is not valid");
  }

  @Test
  void fromEnvironment_headerNameNotAnHttpToken_isRejectedNamingWhatIsAllowed() {
    for (String bad : new String[] {"X-RateLimit/Limit", "Limit(s)", "\"Limit\"", "Limit@"}) {
      assertThatThrownBy(
              () -> EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_LIMIT_LIMIT_HEADER", bad)))
          .isInstanceOf(ConfigException.class)
          .hasMessage(
              "WEIR_ENVOY_LIMIT_LIMIT_HEADER='"
                  + bad
                  + "' is not valid: expected an HTTP header name: one or more letters, digits"
                  + " or !#$%&'*+-.^_`|~");
    }
    assertThat(
            EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_LIMIT_LIMIT_HEADER", "X-Rate_Limit.1"))
                .limitHeader())
        .isEqualTo("X-Rate_Limit.1");
  }

  @Test
  void fromEnvironment_configFileSizeOutOfRange_namesVariableValueAndRange() {
    assertThatThrownBy(
            () -> EnvoySettings.fromEnvironment(Map.of("WEIR_ENVOY_CONFIG_MAX_FILE_SIZE", "100")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ENVOY_CONFIG_MAX_FILE_SIZE='100' is not valid: expected a whole number from 1024"
                + " to 16777216");
  }

  @Test
  void fromEnvironment_xdsSource_readsTheServerNodeTlsHeadersAndRetries() {
    EnvoySettings settings =
        EnvoySettings.fromEnvironment(
            Map.ofEntries(
                Map.entry("WEIR_ENVOY_CONFIG_SOURCE", "xds"),
                Map.entry("WEIR_ENVOY_XDS_SERVER_URL", "envoy-gateway:18001"),
                Map.entry("WEIR_ENVOY_XDS_NODE_ID", "envoy-ratelimit"),
                Map.entry("WEIR_ENVOY_XDS_NODE_METADATA", "a=1,ignored,b=x=y"),
                Map.entry("WEIR_ENVOY_XDS_CLIENT_ADDITIONAL_HEADERS", "authorization:Bearer t"),
                Map.entry("WEIR_ENVOY_XDS_SERVER_USE_TLS", "true"),
                Map.entry("WEIR_ENVOY_XDS_CLIENT_TLS_CERT", "/certs/tls.crt"),
                Map.entry("WEIR_ENVOY_XDS_CLIENT_TLS_KEY", "/certs/tls.key"),
                Map.entry("WEIR_ENVOY_XDS_SERVER_TLS_CACERT", "/certs/ca.crt"),
                Map.entry("WEIR_ENVOY_XDS_SERVER_TLS_SAN", "envoy-gateway"),
                Map.entry("WEIR_ENVOY_XDS_SERVER_CONNECT_RETRY_INTERVAL", "1s"),
                Map.entry("WEIR_ENVOY_XDS_BACKOFF_MAX_INTERVAL", "30s"),
                Map.entry("WEIR_ENVOY_XDS_BACKOFF_JITTER", "false")));

    assertThat(settings.source()).isEqualTo(EnvoySettings.Source.XDS);
    assertThat(settings.enabled()).isTrue();
    XdsSettings xds = settings.xds();
    assertThat(xds.serverAddress()).hasToString("envoy-gateway:18001");
    assertThat(xds.nodeId()).isEqualTo("envoy-ratelimit");
    assertThat(xds.nodeMetadata()).isEqualTo(Map.of("a", "1", "b", "x=y"));
    assertThat(xds.headers()).isEqualTo(Map.of("authorization", "Bearer t"));
    assertThat(xds.useTls()).isTrue();
    assertThat(xds.clientCert()).contains(Path.of("/certs/tls.crt"));
    assertThat(xds.clientKey()).contains(Path.of("/certs/tls.key"));
    assertThat(xds.caCert()).contains(Path.of("/certs/ca.crt"));
    assertThat(xds.serverName()).contains("envoy-gateway");
    assertThat(xds.retry()).isEqualTo(new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(30), 0));
  }

  @Test
  void fromEnvironment_malformedXdsHeaders_namesTheVariableAndNotItsValue() {
    assertThatThrownBy(
            () ->
                EnvoySettings.fromEnvironment(
                    Map.of(
                        "WEIR_ENVOY_CONFIG_SOURCE", "xds",
                        "WEIR_ENVOY_XDS_CLIENT_ADDITIONAL_HEADERS", "x-a:1,Bearer t0k3n")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ENVOY_XDS_CLIENT_ADDITIONAL_HEADERS is not valid: entry 2 of 2 has no ':'"
                + " (its value is not shown: headers may carry credentials); expected key:value"
                + " pairs separated by commas, e.g. a:1,b:2");
  }

  @Test
  void fromEnvironment_xdsHeaderNamesGrpcRefuses_nameTheVariableTheEntryAndWhatIsAllowed() {
    String allowed =
        " (its value is not shown: headers may carry credentials); a header name is one or more"
            + " of a-z, 0-9, '-', '_' and '.' (upper case is lowered)";
    assertThatThrownBy(() -> xdsHeaders("x-a:1, :v"))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ENVOY_XDS_CLIENT_ADDITIONAL_HEADERS is not valid: entry 2 of 2 has the header"
                + " name '', which is empty"
                + allowed);
    assertThatThrownBy(() -> xdsHeaders("x token:abc"))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ENVOY_XDS_CLIENT_ADDITIONAL_HEADERS is not valid: entry 1 of 1 has the header"
                + " name 'x token', which holds the character ' '"
                + allowed);
  }

  @Test
  void fromEnvironment_xdsTlsSanGrpcRefuses_namesTheVariableTheValueAndWhatIsAllowed() {
    assertThatThrownBy(() -> xdsSan("envoy gateway"))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith(
            "WEIR_ENVOY_XDS_SERVER_TLS_SAN='envoy gateway' is not valid: expected the host name"
                + " or IP address the xDS server's certificate carries");
    assertThatThrownBy(() -> xdsSan("user@envoy-gateway"))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("WEIR_ENVOY_XDS_SERVER_TLS_SAN='user@envoy-gateway' is not valid");
    assertThatThrownBy(() -> xdsSan("envoy_gateway"))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ENVOY_XDS_SERVER_TLS_SAN='envoy_gateway' is not valid: expected the host name"
                + " or IP address the xDS server's certificate carries, "
                + HostPort.TLS_NAMES
                + ", e.g. envoy-gateway, 10.0.0.5 or [::1]");
    assertThat(xdsSan("envoy-gateway.1team").xds().serverName()).contains("envoy-gateway.1team");
    assertThat(xdsSan("envoy-gateway.1team.").xds().serverName()).contains("envoy-gateway.1team.");
    assertThatThrownBy(() -> xdsSan("envoy-gateway.1team:443"))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ENVOY_XDS_SERVER_TLS_SAN='envoy-gateway.1team:443' is not valid: expected the"
                + " name without the port, or with a port after "
                + HostPort.GRPC_HOSTS);
    assertThat(xdsSan("envoy-gateway.team.:443").xds().serverName())
        .contains("envoy-gateway.team.:443");
    assertThat(xdsSan("10.0.0.5").xds().serverName()).contains("10.0.0.5");
    assertThat(xdsSan("[::1]").xds().serverName()).contains("[::1]");
    assertThat(xdsSan("envoy-gateway:443").xds().serverName()).contains("envoy-gateway:443");
  }

  @Test
  void fromEnvironment_xdsTlsSanWithTlsOff_isNotChecked() {
    EnvoySettings settings =
        EnvoySettings.fromEnvironment(
            Map.of(
                "WEIR_ENVOY_CONFIG_SOURCE", "xds",
                "WEIR_ENVOY_XDS_SERVER_USE_TLS", "false",
                "WEIR_ENVOY_XDS_SERVER_TLS_SAN", "envoy_gateway"));

    assertThat(settings.xds().useTls()).isFalse();
  }

  private static EnvoySettings xdsSan(String value) {
    return EnvoySettings.fromEnvironment(
        Map.of(
            "WEIR_ENVOY_CONFIG_SOURCE", "xds",
            "WEIR_ENVOY_XDS_SERVER_USE_TLS", "true",
            "WEIR_ENVOY_XDS_SERVER_TLS_SAN", value));
  }

  @Test
  void fromEnvironment_xdsBinaryHeaderNames_areAccepted() {
    assertThat(xdsHeaders("x-token-bin:abc").xds().headers()).containsEntry("x-token-bin", "abc");
  }

  @Test
  void fromEnvironment_xdsHeaderNamesInUpperCase_areAccepted() {
    assertThat(xdsHeaders("X-Tenant_ID.v2:a").xds().headers()).containsEntry("X-Tenant_ID.v2", "a");
  }

  private static EnvoySettings xdsHeaders(String value) {
    return EnvoySettings.fromEnvironment(
        Map.of(
            "WEIR_ENVOY_CONFIG_SOURCE", "xds",
            "WEIR_ENVOY_XDS_CLIENT_ADDITIONAL_HEADERS", value));
  }

  @Test
  void fromEnvironment_xdsClientCertWithoutKey_namesBoth() {
    assertThatThrownBy(
            () ->
                EnvoySettings.fromEnvironment(
                    Map.of("WEIR_ENVOY_XDS_CLIENT_TLS_CERT", "/certs/tls.crt")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ENVOY_XDS_CLIENT_TLS_CERT and WEIR_ENVOY_XDS_CLIENT_TLS_KEY must be set together:"
                + " only WEIR_ENVOY_XDS_CLIENT_TLS_CERT is set");
  }

  @Test
  void backoff_doublesUpToTheMaximum_spreadByTheRandomFactor() {
    Backoff backoff = new Backoff(Duration.ofSeconds(3), Duration.ofSeconds(60), 0.5);

    assertThat(backoff.delay(0, 0.5)).isEqualTo(Duration.ofSeconds(3));
    assertThat(backoff.delay(1, 0.5)).isEqualTo(Duration.ofSeconds(6));
    assertThat(backoff.delay(4, 0.5)).isEqualTo(Duration.ofSeconds(48));
    assertThat(backoff.delay(5, 0.5)).isEqualTo(Duration.ofSeconds(60));
    assertThat(backoff.delay(50, 0.5)).isEqualTo(Duration.ofSeconds(60));
    assertThat(backoff.delay(0, 0.0)).isEqualTo(Duration.ofMillis(1500));
    assertThat(backoff.delay(0, 1.0)).isEqualTo(Duration.ofMillis(4500));
  }
}
