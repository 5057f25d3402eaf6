package dev.weir.helm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.istio.api.api.networking.v1alpha3.EnvoyFilterEnvoyConfigObjectPatch;
import io.fabric8.istio.api.networking.v1alpha3.EnvoyFilter;
import io.fabric8.istio.api.networking.v1beta1.DestinationRule;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The chart's optional Istio resources: as the overlays for equal settings, and this release's. */
class IstioTest {
  private static final Path ISTIO = Chart.REPO.resolve("manifests/overlays/istio");
  private static final String BOTH =
      "istio: {warmup: {enabled: true}, gatewayFilter: {enabled: true}}\n";

  @Test
  void off_byDefault() {
    Rendered r = Chart.render("");

    assertThat(r.all(EnvoyFilter.class)).isEmpty();
    assertThat(r.all(DestinationRule.class)).isEmpty();
  }

  @Test
  void defaults_sameAsTheIstioOverlays() throws IOException {
    Rendered r = Chart.render(BOTH);
    EnvoyFilter overlayFilter = read(EnvoyFilter.class, "envoyfilter-ratelimit.yaml");
    DestinationRule overlayRule = read(DestinationRule.class, "warmup/destinationrule-weir.yaml");
    EnvoyFilter filter = r.only(EnvoyFilter.class);
    DestinationRule rule = r.only(DestinationRule.class);

    assertThat(filter.getMetadata().getNamespace())
        .isEqualTo(overlayFilter.getMetadata().getNamespace());
    assertThat(filter.getSpec()).isEqualTo(overlayFilter.getSpec());
    assertThat(rule.getMetadata().getNamespace())
        .isEqualTo(overlayRule.getMetadata().getNamespace());
    assertThat(rule.getSpec()).isEqualTo(overlayRule.getSpec());
  }

  @Test
  void anotherReleaseNamespaceAndPort_callTheirOwnService() {
    Rendered r =
        Chart.render(
            "rl",
            "edge",
            "service: {grpcPort: 9091}\n"
                + "istio: {warmup: {enabled: true},"
                + " gatewayFilter: {enabled: true, domain: edge, failureModeDeny: true}}\n");
    Service client =
        r.all(Service.class).stream()
            .filter(s -> s.getMetadata().getName().equals(r.deployment().getMetadata().getName()))
            .findFirst()
            .orElseThrow();
    String host = client.getMetadata().getName() + ".edge.svc.cluster.local";
    EnvoyFilterEnvoyConfigObjectPatch patch =
        r.only(EnvoyFilter.class).getSpec().getConfigPatches().get(0);
    Map<?, ?> value =
        Serialization.unmarshal(Serialization.asJson(patch.getPatch().getValue()), Map.class);
    Map<?, ?> typed = (Map<?, ?>) value.get("typed_config");
    Map<?, ?> grpc =
        (Map<?, ?>)
            ((Map<?, ?>) ((Map<?, ?>) typed.get("rate_limit_service")).get("grpc_service"))
                .get("envoy_grpc");

    assertThat(client.getSpec().getPorts())
        .anySatisfy(p -> assertThat(p.getPort()).isEqualTo(9091));
    assertThat(grpc.get("cluster_name")).isEqualTo("outbound|9091||" + host);
    assertThat(grpc.get("authority")).isEqualTo(host);
    assertThat(typed.get("domain")).isEqualTo("edge");
    assertThat(typed.get("failure_mode_deny")).isEqualTo(true);
    assertThat(r.only(DestinationRule.class).getSpec().getHost()).isEqualTo(host);
    assertThat(r.only(DestinationRule.class).getMetadata().getNamespace()).isEqualTo("edge");
  }

  @Test
  void gatewayFilter_withTls_refusedNamingBothValues() {
    // With tls.enabled the client port is tls-rls (appProtocol tls, passed through by Istio) while
    // the filter would call it as plain gRPC: every call would fail, and with failureModeDeny
    // false every request would pass unlimited.
    for (String tls :
        List.of(
            "tls: {enabled: true, secretName: weir-tls}\n",
            "tls: {enabled: true, secretName: weir-tls, clientAuth: require-and-verify}\n")) {
      assertThatThrownBy(() -> Chart.render(tls + "istio: {gatewayFilter: {enabled: true}}\n"))
          .hasMessageContaining("istio.gatewayFilter.enabled")
          .hasMessageContaining("tls.enabled");
    }
    // the warm-up rule alone stays fine with TLS: it only balances the calls
    assertThat(
            Chart.render(
                    "tls: {enabled: true, secretName: weir-tls}\n"
                        + "istio: {warmup: {enabled: true}}\n")
                .all(DestinationRule.class))
        .hasSize(1);
  }

  private static <T extends HasMetadata> T read(Class<T> type, String file) throws IOException {
    return type.cast(
        Serialization.unmarshal(Files.readString(ISTIO.resolve(file)), HasMetadata.class));
  }
}
