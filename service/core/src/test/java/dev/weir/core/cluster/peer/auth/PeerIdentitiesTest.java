package dev.weir.core.cluster.peer.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PeerIdentitiesTest {

  @ParameterizedTest(name = "{0} ~ {1}: {2}")
  @CsvSource({
    "weir.weir.svc.cluster.local, weir.weir.svc.cluster.local, true",
    "weir.weir.svc.cluster.local, WEIR.weir.svc.cluster.local, true",
    "weir.weir.svc.cluster.local, envoy.weir.svc.cluster.local, false",
    "*.weir.svc.cluster.local, weir-0.weir.svc.cluster.local, true",
    "*.weir.svc.cluster.local, a.b.weir.svc.cluster.local, false",
    "*.weir.svc.cluster.local, weir.svc.cluster.local, false",
    "*.weir.svc.cluster.local, .weir.svc.cluster.local, false",
    "spiffe://cluster.local/ns/weir/sa/*, spiffe://cluster.local/ns/weir/sa/weir, true",
    "spiffe://cluster.local/ns/weir/sa/*, spiffe://cluster.local/ns/default/sa/weir, false",
    "spiffe://cluster.local/ns/weir/sa/*, spiffe://cluster.local/ns/weir/sa/, false",
    "spiffe://cluster.local/ns/weir/sa/*, spiffe://cluster.local/ns/weir/sa/a/b, false",
    "spiffe://cluster.local/ns/weir/sa/weir, spiffe://cluster.local/ns/weir/sa/weir, true",
    "spiffe://cluster.local/ns/weir/sa/weir, spiffe://cluster.local/ns/weir/sa/WEIR, false",
    "spiffe://*/ns/weir/sa/weir, spiffe://other.domain/ns/weir/sa/weir, true",
    "weir.example, spiffe://weir.example, false",
    "127.0.0.1, 127.0.0.1, true",
    "127.0.0.1, 127.0.0.2, false",
    "fd00::7, fd00:0:0:0:0:0:0:7, true",
    "FD00:0::7, fd00::7, true",
    "[fd00::7], fd00::7, true",
    "fd00::7, fd00::8, false",
    "fd00::7, fd00.7, false",
  })
  void matches_table(String pattern, String identity, boolean expected) {
    assertThat(PeerIdentities.matches(pattern, identity)).isEqualTo(expected);
  }

  @Test
  void allowsAny_oneOfSeveralIdentitiesAllowed_true() {
    PeerIdentities list =
        PeerIdentities.of(
            List.of("*.weir.svc.cluster.local", "spiffe://cluster.local/ns/weir/sa/*"));

    assertThat(list.allowsAny(List.of("localhost", "spiffe://cluster.local/ns/weir/sa/weir")))
        .isTrue();
    assertThat(list.allowsAny(List.of("localhost", "spiffe://cluster.local/ns/default/sa/envoy")))
        .isFalse();
    assertThat(list.allowsAny(List.of())).isFalse();
  }

  @Test
  void of_ipv6Pattern_isAccepted() {
    assertThat(PeerIdentities.of(List.of("fd00::7", "::1")).allowsAny(List.of("0:0:0:0:0:0:0:1")))
        .isTrue();
  }

  @ParameterizedTest
  @CsvSource({
    "'we*ir.svc', '*' must be a whole DNS label, got 'we*ir'",
    "'spiffe://cluster.local/ns/weir/sa/weir-*', '*' must be a whole path segment",
    "'*', names nothing but wildcards",
    "'*.*', names nothing but wildcards",
    "'spiffe://*/*', names nothing but wildcards",
    "' ', is empty",
  })
  void of_badPattern_failsNamingIt(String pattern, String problem) {
    assertThatThrownBy(() -> PeerIdentities.of(List.of(pattern)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(problem);
  }

  @ParameterizedTest
  @CsvSource({
    "'10.0.0.0/8', a CIDR range",
    "'fd00::/64', a CIDR range",
    "'weir-0.weir.svc:1052', a port",
    "'a.b:1052', a port",
    "'weir:', a port",
    "'fd00::7/64', a CIDR range",
    "'[fd00::7]:1052', a port",
    "'a b', a space",
    "'spiffe://cluster.local/ns/weir/sa/a b', a space",
    "'weir_0.svc,x', a ','",
    "'weir..svc', an empty DNS label",
  })
  void of_patternNoCertificateCanCarry_failsNamingItAndWhatIsAllowed(
      String pattern, String problem) {
    assertThatThrownBy(() -> PeerIdentities.of(List.of(pattern)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("peer identity pattern '" + pattern + "'")
        .hasMessageContaining(problem)
        .hasMessageContaining("CIDR ranges and ports are not identities")
        .hasMessageContaining(
            "allowed: a DNS name, a URI such as a SPIFFE ID or one IP address");
  }

  @Test
  void of_uriAndIpLiterals_areAccepted() {
    PeerIdentities list =
        PeerIdentities.of(
            List.of(
                "spiffe://cluster.local/ns/x/sa/y",
                "https://weir.example:8443/peer",
                "[fd00::7]",
                "::ffff:10.0.0.1",
                "10.0.0.7",
                "_weir.weir-0.svc"));

    assertThat(list.allowsAny(List.of("spiffe://cluster.local/ns/x/sa/y"))).isTrue();
    assertThat(list.allowsAny(List.of("fd00::7"))).isTrue();
    assertThat(list.allowsAny(List.of("10.0.0.7"))).isTrue();
  }

  @ParameterizedTest
  @CsvSource({
    "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66",
    "urn:example:weir-0",
    "weir:peer",
  })
  void of_uriWithoutAuthority_allowsThatUri(String uri) {
    assertThat(PeerIdentities.of(List.of(uri)).allowsAny(List.of(uri))).isTrue();
  }

  @Test
  void of_commaInsideAUri_isAccepted() {
    String uri = "https://weir.example/peers/a,b";

    assertThat(PeerIdentities.of(List.of(uri)).allowsAny(List.of(uri))).isTrue();
  }

  @Test
  void of_emptyList_fails() {
    assertThatThrownBy(() -> PeerIdentities.of(List.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("empty");
  }
}
