package dev.weir.tls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.cluster.peer.auth.PeerIdentities;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link PeerIdentities#ofCertificate} on certificates the {@link CertificateAuthority} issues. */
class PeerIdentitiesOfCertificateTest {

  @Test
  void ofCertificate_allowsExactlyItsNames() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("ca", Duration.ofDays(1));
    CertificateAuthority.Identity node =
        ca.issue(
            "weir",
            List.of("weir.weir.svc", "spiffe://cluster.local/ns/weir/sa/weir", "10.0.0.7"),
            Duration.ofDays(1));

    PeerIdentities own = PeerIdentities.ofCertificate(node.chain()[0]);

    assertThat(own.patterns())
        .containsExactlyInAnyOrder(
            "weir.weir.svc", "spiffe://cluster.local/ns/weir/sa/weir", "10.0.0.7");
    assertThat(own.allowsAny(List.of("spiffe://cluster.local/ns/weir/sa/weir"))).isTrue();
    assertThat(own.allowsAny(List.of("spiffe://cluster.local/ns/weir/sa/other"))).isFalse();
  }

  @Test
  void ofCertificate_wildcardName_allowsThatNameOnlyNotEveryNameItCovers() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("ca", Duration.ofDays(1));
    CertificateAuthority.Identity node =
        ca.issue("weir", List.of("*.weir.svc"), Duration.ofDays(1));

    PeerIdentities own = PeerIdentities.ofCertificate(node.chain()[0]);

    assertThat(own.allowsAny(List.of("envoy.weir.svc"))).isFalse();
    assertThat(own.allowsAny(List.of("*.weir.svc"))).isTrue();
    assertThat(own.allowsAny(List.of("*.WEIR.svc"))).isTrue();
  }

  @Test
  void ipv6Name_matchesThePatternAndTheOwnNameAsWritten() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("ca", Duration.ofDays(1));
    CertificateAuthority.Identity node = ca.issue("weir", List.of("fd00::7"), Duration.ofDays(1));
    CertificateAuthority.Identity other = ca.issue("weir", List.of("fd00::8"), Duration.ofDays(1));
    List<String> identities = PeerIdentities.identitiesOf(node.chain()[0]);

    assertThat(identities).containsExactly("fd00::7");
    assertThat(PeerIdentities.of(List.of("fd00::7")).allowsAny(identities)).isTrue();
    assertThat(PeerIdentities.of(List.of("FD00:0:0::7")).allowsAny(identities)).isTrue();
    assertThat(PeerIdentities.ofCertificate(other.chain()[0]).allowsAny(identities)).isFalse();
    assertThat(PeerIdentities.ofCertificate(node.chain()[0]).allowsAny(identities)).isTrue();
  }

  @Test
  void issue_zonedIpv6Host_issuedForTheAddressWithoutItsZone() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("ca", Duration.ofDays(1));
    CertificateAuthority.Identity node =
        ca.issue("weir", List.of("fe80::1%lo", "localhost"), Duration.ofDays(1));

    assertThat(PeerIdentities.identitiesOf(node.chain()[0]))
        .containsExactlyInAnyOrder("fe80::1", "localhost");
  }

  @Test
  void issue_hostOfDigitsAndDotsThatIsNoIpv4Address_issuedAsADnsName() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("ca", Duration.ofDays(1));
    CertificateAuthority.Identity node =
        ca.issue("weir", List.of("1.2.3", "10.0.0.7"), Duration.ofDays(1));

    assertThat(node.chain()[0].getSubjectAlternativeNames())
        .containsExactlyInAnyOrder(List.of(2, "1.2.3"), List.of(7, "10.0.0.7"));
  }

  @Test
  void ofCertificate_withoutAlternativeNames_failsNamingTheCertificateAndWhatItNeeds()
      throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("ca", Duration.ofDays(1));
    CertificateAuthority.Identity bare = ca.issue("bare", List.of(), Duration.ofDays(1));

    assertThatThrownBy(() -> PeerIdentities.ofCertificate(bare.chain()[0]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("(CN=bare)")
        .hasMessageEndingWith("use a certificate with a DNS, URI or IP subject alternative name");
  }
}
