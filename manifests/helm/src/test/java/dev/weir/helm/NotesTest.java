package dev.weir.helm;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The notes {@code helm install} prints: what runs and how clients reach it. */
class NotesTest {
  private static final String HOST = "weir.weir.svc.cluster.local";

  @Test
  void plaintext_httpUrlAndPlainGrpc() {
    String notes = Chart.notes("");

    assertThat(notes)
        .contains("http://" + HOST + ":8080")
        .contains(HOST + ":8081")
        .doesNotContain("https://")
        .doesNotContain("TLS");
  }

  @Test
  void tls_httpsUrlAndGrpcOverTls_neverAPlaintextUrl() {
    String notes =
        Chart.notes("tls: {enabled: true, secretName: weir-tls}\nservice: {httpPort: 8443}\n");

    assertThat(notes)
        .contains("https://" + HOST + ":8443")
        .containsPattern("gRPC over TLS[^\\n]*" + HOST.replace(".", "\\.") + ":8081")
        .doesNotContain("http://");
  }

  @Test
  void mutualTls_saysClientsMustPresentACertificate() {
    String notes =
        Chart.notes("tls: {enabled: true, secretName: weir-tls, clientAuth: require-and-verify}\n");

    assertThat(notes)
        .contains("require every client to present a client certificate")
        .doesNotContain("optional")
        .doesNotContain(" ask ");
  }

  @Test
  void requestedClientCertificate_saysItIsOptional() {
    String notes =
        Chart.notes("tls: {enabled: true, secretName: weir-tls, clientAuth: request}\n");

    assertThat(notes)
        .contains("ask every client for an optional client certificate")
        .doesNotContain("require");
  }

  @Test
  void tlsWithoutClientAuth_mentionsNoClientCertificate() {
    String notes = Chart.notes("tls: {enabled: true, secretName: weir-tls}\n");

    assertThat(notes).doesNotContain("client certificate");
  }

  @Test
  void version_isTheImageThatRuns_notTheChartsAppVersion() {
    String notes = Chart.notes("image: {repository: registry.example/weir, tag: \"0.2.0\"}\n");

    assertThat(notes).contains("registry.example/weir:0.2.0").doesNotContain("Weir 0.1.0");
  }
}
