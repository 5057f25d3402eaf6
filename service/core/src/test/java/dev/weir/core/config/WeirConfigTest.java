package dev.weir.core.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class WeirConfigTest {

  private static final HostAddressResolver HOST = () -> "10.1.2.3";

  private static WeirConfig load(Map<String, String> env) {
    return WeirConfig.from(new EnvReader(env), HOST);
  }

  @Test
  void from_emptyEnv_gubernatorDefaults() {
    WeirConfig config = load(Map.of());
    assertThat(config.grpcAddress()).isEqualTo(new HostPort("localhost", 1051));
    assertThat(config.httpAddress()).isEqualTo(new HostPort("localhost", 1050));
    assertThat(config.advertiseAddress()).isEqualTo(new HostPort("localhost", 1051));
    assertThat(config.cacheSize()).isEqualTo(50_000);
    assertThat(config.logLevel()).isEqualTo("info");
  }

  @Test
  void from_gubernatorEnv_aliasesAccepted() {
    WeirConfig config =
        load(
            Map.of(
                "GUBER_GRPC_ADDRESS", "127.0.0.1:81",
                "GUBER_HTTP_ADDRESS", "127.0.0.1:80",
                "GUBER_ADVERTISE_ADDRESS", "node-1:81",
                "GUBER_CACHE_SIZE", "10",
                "GUBER_LOG_LEVEL", "debug"));
    assertThat(config)
        .isEqualTo(
            new WeirConfig(
                new HostPort("127.0.0.1", 81),
                new HostPort("127.0.0.1", 80),
                new HostPort("node-1", 81),
                10,
                "debug"));
  }

  @Test
  void from_advertiseAddressWithABadHost_errorNamesVariableAndHost() {
    assertThatThrownBy(() -> load(Map.of("WEIR_ADVERTISE_ADDRESS", "node/1:1051")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_ADVERTISE_ADDRESS='node/1:1051' is not valid")
        .hasMessageContaining("host 'node/1' holds '/'");
  }

  @Test
  void checkPeersCanCall_advertiseHostGrpcRefuses_errorNamesVariableValueAndWhatIsAllowed() {
    Map<String, String> env = Map.of("WEIR_ADVERTISE_ADDRESS", "weir_1:0");

    assertThatThrownBy(() -> load(env).checkPeersCanCall(new EnvReader(env)))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_ADVERTISE_ADDRESS='weir_1:0' is not valid: expected host:port that peers can"
                + " call, e.g. 10.0.0.5:1051 or [fd00::5]:1051 (host 'weir_1' is refused by gRPC;"
                + " give "
                + HostPort.GRPC_HOSTS
                + ")");
  }

  @Test
  void checkPeersCanCall_advertiseHostGrpcAcceptsPortZero_passes() {
    Map<String, String> env = Map.of("WEIR_ADVERTISE_ADDRESS", "weir-1:0");

    load(env).checkPeersCanCall(new EnvReader(env));
  }

  @Test
  void from_weirAndGuberSet_weirWins() {
    WeirConfig config = load(Map.of("GUBER_CACHE_SIZE", "10", "WEIR_CACHE_SIZE", "20"));
    assertThat(config.cacheSize()).isEqualTo(20);
  }

  @Test
  void from_wildcardGrpcAddress_advertisesHostAddress() {
    WeirConfig config = load(Map.of("WEIR_GRPC_ADDRESS", "0.0.0.0:1051"));
    assertThat(config.advertiseAddress()).isEqualTo(new HostPort("10.1.2.3", 1051));
  }

  @Test
  void from_wildcardAdvertiseAddress_hostReplaced() {
    WeirConfig config = load(Map.of("WEIR_ADVERTISE_ADDRESS", "[::]:9"));
    assertThat(config.advertiseAddress()).isEqualTo(new HostPort("10.1.2.3", 9));
  }

  @Test
  void from_wildcardAdvertise_ipv6PodIp_advertisesBracketedPodIp() {
    WeirConfig config =
        load(Map.of("WEIR_GRPC_ADDRESS", "0.0.0.0:1051", "WEIR_K8S_POD_IP", "FD00:0:0:0:0:0:0:5"));

    assertThat(config.advertiseAddress()).isEqualTo(new HostPort("fd00::5", 1051));
    assertThat(config.advertiseAddress().toString()).isEqualTo("[fd00::5]:1051");
    assertThat(HostPort.parse(config.advertiseAddress().toString()))
        .isEqualTo(config.advertiseAddress());
  }

  @Test
  void from_wildcardAdvertise_guberPodIp_advertisesPodIp() {
    WeirConfig config =
        load(Map.of("WEIR_ADVERTISE_ADDRESS", ":8081", "GUBER_K8S_POD_IP", "10.9.8.7"));

    assertThat(config.advertiseAddress()).isEqualTo(new HostPort("10.9.8.7", 8081));
  }

  @Test
  void from_advertiseAddressSet_podIpIgnored() {
    WeirConfig config =
        load(Map.of("WEIR_ADVERTISE_ADDRESS", "weir-0.weir:1051", "WEIR_K8S_POD_IP", "fd00::5"));

    assertThat(config.advertiseAddress()).isEqualTo(new HostPort("weir-0.weir", 1051));
  }

  @Test
  void from_wildcardAdvertise_podIpNotAnIp_oneLineError() {
    assertThatThrownBy(
            () ->
                load(Map.of("WEIR_GRPC_ADDRESS", "0.0.0.0:1051", "WEIR_K8S_POD_IP", "$(POD_IP)")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_K8S_POD_IP='$(POD_IP)' is not valid: expected an IPv4 or IPv6 address, such as"
                + " the downward API's status.podIP");
  }

  @Test
  void from_badCacheSize_oneLineError() {
    assertThatThrownBy(() -> load(Map.of("WEIR_CACHE_SIZE", "abc")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_CACHE_SIZE='abc' is not valid: expected a whole number from 1 to 2147483647");
  }

  @Test
  void from_zeroCacheSize_oneLineError() {
    assertThatThrownBy(() -> load(Map.of("GUBER_CACHE_SIZE", "0")))
        .hasMessage(
            "GUBER_CACHE_SIZE='0' is not valid: expected a whole number from 1 to 2147483647");
  }

  @Test
  void from_badGrpcAddress_oneLineError() {
    assertThatThrownBy(() -> load(Map.of("WEIR_GRPC_ADDRESS", "1051")))
        .hasMessageStartingWith("WEIR_GRPC_ADDRESS='1051' is not valid: expected host:port");
  }

  @Test
  void from_badLogLevel_oneLineError() {
    assertThatThrownBy(() -> load(Map.of("WEIR_LOG_LEVEL", "loud")))
        .hasMessage(
            "WEIR_LOG_LEVEL='loud' is not valid: expected one of trace, debug, info, warn, warning,"
                + " error, fatal, panic");
  }

  @Test
  void from_logrusLevels_mappedToLogback() {
    assertThat(load(Map.of("WEIR_LOG_LEVEL", "WARNING")).logLevel()).isEqualTo("warn");
    assertThat(load(Map.of("WEIR_LOG_LEVEL", "fatal")).logLevel()).isEqualTo("error");
    assertThat(load(Map.of("WEIR_LOG_LEVEL", "panic")).logLevel()).isEqualTo("error");
  }

  @Test
  void describe_defaults_oneLine() {
    assertThat(load(Map.of()).describe())
        .isEqualTo(
            "grpc_address=localhost:1051 http_address=localhost:1050"
                + " advertise_address=localhost:1051 cache_size=50000 log_level=info");
  }

  @Test
  void systemResolver_returnsSomeAddress() {
    assertThat(HostAddressResolver.system().resolve()).isNotBlank();
  }
}
