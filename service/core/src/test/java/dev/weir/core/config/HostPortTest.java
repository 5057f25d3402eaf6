package dev.weir.core.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class HostPortTest {

  @ParameterizedTest
  @CsvSource({
    "localhost:1051, localhost, 1051",
    "0.0.0.0:80, 0.0.0.0, 80",
    ":1050, '', 1050",
    "[::1]:1051, ::1, 1051",
    "[::]:0, ::, 0",
    "[fe80::1%eth0]:80, fe80::1%eth0, 80",
    "[::ffff:10.0.0.1]:80, ::ffff:10.0.0.1, 80",
    "localhost:+80, localhost, 80",
  })
  void parse_validAddress_splitsHostAndPort(String text, String host, int port) {
    assertThat(HostPort.parse(text)).isEqualTo(new HostPort(host, port));
  }

  @ParameterizedTest
  @CsvSource({
    "localhost, missing ':port'",
    "localhost:http, port 'http' is not a number",
    "localhost:65536, port 65536 is outside 0-65535",
    "::1:1051, an IPv6 host must be written in brackets",
    "[::1:1051, unbalanced brackets",
    "'[foo]:80', brackets hold only an IPv6 address, not 'foo'; write foo:80",
    "'[10.0.0.1]:80', brackets hold only an IPv6 address, not '10.0.0.1'; write 10.0.0.1:80",
    "'[a/b]:80', brackets hold only an IPv6 address, not 'a/b'",
    "'[::1]:\uff18\uff10', port '\uff18\uff10' is not a number",
    "'localhost:++80', port '++80' is not a number",
  })
  void parse_invalidAddress_namesProblem(String text, String problem) {
    assertThatThrownBy(() -> HostPort.parse(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(problem);
  }

  @ParameterizedTest
  @CsvSource({
    "'http://a:1', write host:port without a scheme such as 'http://'",
    "'a:1;b:2', it holds ';'",
    "'a:1 b:2', it holds a space",
    "'a:1 http://b:2', it holds a space",
    "'a:1,b:2', it holds ','",
    "'a;b:2', it holds ';'",
    "'a/b:2', host 'a/b' holds '/'",
    "'::1:1051', an IPv6 host must be written in brackets",
  })
  void parseSetting_notOneAddress_namesProblem(String text, String problem) {
    assertThatThrownBy(() -> HostPort.parseSetting(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(problem);
  }

  @ParameterizedTest
  @CsvSource({
    "weir-0.weir_peers.svc:1051, weir-0.weir_peers.svc, 1051",
    "10.0.0.1:80, 10.0.0.1, 80",
    "[fd00::5]:1051, fd00::5, 1051",
    "' :1050 ', '', 1050",
  })
  void parseSetting_oneAddress_sameAsParse(String text, String host, int port) {
    assertThat(HostPort.parseSetting(text)).isEqualTo(new HostPort(host, port));
  }

  @Test
  void toString_ipv6Host_bracketed() {
    assertThat(new HostPort("::1", 5).toString()).isEqualTo("[::1]:5");
    assertThat(new HostPort("10.0.0.1", 5).toString()).isEqualTo("10.0.0.1:5");
  }

  @Test
  void isWildcard_anyInterfaceHosts_true() {
    assertThat(HostPort.parse("0.0.0.0:1").isWildcard()).isTrue();
    assertThat(HostPort.parse("[::]:1").isWildcard()).isTrue();
    assertThat(HostPort.parse(":1").isWildcard()).isTrue();
    assertThat(HostPort.parse("localhost:1").isWildcard()).isFalse();
  }
  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "xds_server:18000 | host 'xds_server' is refused by gRPC",
        ":18001 | the host is empty; give a host name gRPC accepts",
        "-x:1 | host '-x' is refused by gRPC",
        "a..b:1 | host 'a..b' is refused by gRPC",
        "http://a:1 | without a scheme"
      })
  void parseGrpcTarget_hostGrpcRefuses_namesHostAndWhatIsAllowed(String text, String problem) {
    assertThatThrownBy(() -> HostPort.parseGrpcTarget(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(problem);
  }

  @Test
  void parseGrpcTarget_hostGrpcRefuses_saysWhatIsAllowed() {
    assertThatThrownBy(() -> HostPort.parseGrpcTarget("weir_1:1051"))
        .hasMessage(
            "host 'weir_1' is refused by gRPC; give " + HostPort.GRPC_HOSTS);
  }

  @ParameterizedTest
  @CsvSource({
    "xds-server:18000, xds-server, 18000",
    "10.0.0.1:1051, 10.0.0.1, 1051",
    "[::1]:1051, ::1, 1051",
    "Weir-1.svc.cluster.local:1051, Weir-1.svc.cluster.local, 1051",
    "weir.svc.cluster.local.:1051, weir.svc.cluster.local., 1051"
  })
  void parseGrpcTarget_hostGrpcAccepts_parsed(String text, String host, int port) {
    assertThat(HostPort.parseGrpcTarget(text)).isEqualTo(new HostPort(host, port));
  }

  @ParameterizedTest
  @ValueSource(strings = {"localhost:0", "10.0.0.1:0", ":0"})
  void parseGrpcTarget_portZero_refusedAsNoPortToConnectTo(String text) {
    assertThatThrownBy(() -> HostPort.parseGrpcTarget(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("port 0")
        .hasMessageContaining("1 to 65535");
  }

  @Test
  void parseGrpcTarget_lastPartStartingWithADigit_messageSaysTheLastPartMustStartWithALetter() {
    assertThatThrownBy(() -> HostPort.parseGrpcTarget("weir.0:1"))
        .hasMessage("host 'weir.0' is refused by gRPC; give " + HostPort.GRPC_HOSTS)
        .hasMessageContaining("the last starting with a letter");
  }

  @Test
  void parseGrpcTarget_twoTrailingDots_refusedAndTheRuleAllowsOnlyOne() {
    assertThatThrownBy(() -> HostPort.parseGrpcTarget("weir.local..:1"))
        .hasMessage("host 'weir.local..' is refused by gRPC; give " + HostPort.GRPC_HOSTS)
        .hasMessageContaining("one trailing '.'");
  }

  @Test
  void parseGrpcTarget_hostCharacterNoHostHolds_messageOffersNoUnderscore() {
    assertThatThrownBy(() -> HostPort.parseGrpcTarget("a!b:1"))
        .hasMessage("host 'a!b' holds '!'; give " + HostPort.GRPC_HOSTS)
        .message()
        .doesNotContain("'-' and '_'");
  }

  @ParameterizedTest
  @CsvSource({":18001, localhost, 18001", "xds:18000, xds, 18000", "[::1]:1, ::1, 1"})
  void parseLocalGrpcTarget_emptyHostIsLocalhost(String text, String host, int port) {
    assertThat(HostPort.parseLocalGrpcTarget(text)).isEqualTo(new HostPort(host, port));
  }

  @ParameterizedTest
  @ValueSource(strings = {"xds_server:18000", ":0", "a..b:1"})
  void parseLocalGrpcTarget_targetGrpcRefuses_refused(String text) {
    assertThatThrownBy(() -> HostPort.parseLocalGrpcTarget(text))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void requireGrpcHost_hostGrpcRefuses_refusedPortZeroAllowed() {
    assertThat(new HostPort("weir-1", 0).requireGrpcHost()).isEqualTo(new HostPort("weir-1", 0));
    assertThatThrownBy(() -> new HostPort("weir_1", 1051).requireGrpcHost())
        .hasMessage("host 'weir_1' is refused by gRPC; give " + HostPort.GRPC_HOSTS);
  }

  @ParameterizedTest
  @ValueSource(strings = {"envoy-gateway", "weir.svc.cluster.local.", "10.0.0.5", "[::1]"})
  void isGrpcHost_nameOrAddressWithoutPort_true(String host) {
    assertThat(HostPort.isGrpcHost(host)).isTrue();
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "envoy_gateway", "envoy gateway", "a@envoy", "envoy:443", "a..b"})
  void isGrpcHost_underscoreSpaceUserInfoPortOrEmptyLabel_false(String host) {
    assertThat(HostPort.isGrpcHost(host)).isFalse();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"weir-peers.1team", "weir.svc.cluster.local.", "a.1b", "10.0.0.5", "[::1]", "1team"})
  void isTlsName_nameTheJdkSendsAsSniOrAddress_true(String name) {
    assertThat(HostPort.isTlsName(name)).isTrue();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "", ".", "weir_peers", "weir peers", "-weir", "weir-", "a..b", "a.b..", "weir:443", "[::1",
        "b\u00fccher.test"
      })
  void isTlsName_underscoreSpaceEdgeHyphenEmptyPartPortOrNonAscii_false(String name) {
    assertThat(HostPort.isTlsName(name)).isFalse();
  }
}
