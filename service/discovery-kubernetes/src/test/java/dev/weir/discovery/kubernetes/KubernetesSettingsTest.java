package dev.weir.discovery.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.discovery.DiscoveryEnv;
import java.util.Map;
import org.junit.jupiter.api.Test;

class KubernetesSettingsTest {

  @Test
  void fromEnv_nothingSet_endpointSlicesOfWeirPeersOnAdvertisedPort() {
    KubernetesSettings s = KubernetesSettings.fromEnv(new DiscoveryEnv(Map.of()), "10.0.0.1:1051");

    assertThat(s.mechanism()).isEqualTo(KubernetesSettings.Mechanism.ENDPOINT_SLICES);
    assertThat(s.serviceName()).isEqualTo("weir-peers");
    assertThat(s.namespace()).isEmpty();
    assertThat(s.podPort()).isEqualTo(1051);
    assertThat(s.selfAddress("10.0.0.1:1051")).isEqualTo("10.0.0.1:1051");
  }

  @Test
  void fromEnv_podIpLongHandIpv6_spelledAsKubernetesListsIt() {
    KubernetesSettings s =
        KubernetesSettings.fromEnv(
            new DiscoveryEnv(Map.of("WEIR_K8S_POD_IP", "FD00:0:0:0:0:0:0:2")), "0.0.0.0:1051");

    assertThat(s.selfAddress("0.0.0.0:1051")).isEqualTo("[fd00::2]:1051");
  }

  @Test
  void fromEnv_podIpNotAnAddress_errorNamesVariableValueAndWhatIsAllowed() {
    assertThatThrownBy(
            () ->
                KubernetesSettings.fromEnv(
                    new DiscoveryEnv(Map.of("WEIR_K8S_POD_IP", "$(POD_IP)")), "0.0.0.0:1051"))
        .hasMessageContaining("WEIR_K8S_POD_IP")
        .hasMessageContaining("$(POD_IP)")
        .hasMessageContaining("an IPv4 or IPv6 address");
  }

  @Test
  void fromEnv_gubernatorDeploymentEnv_readThroughAliases() {
    KubernetesSettings s =
        KubernetesSettings.fromEnv(
            new DiscoveryEnv(
                Map.of(
                    "GUBER_K8S_NAMESPACE", "rl",
                    "GUBER_K8S_POD_IP", "fd00::5",
                    "GUBER_K8S_POD_PORT", "81",
                    "GUBER_K8S_SERVICE_NAME", "gubernator",
                    "GUBER_K8S_WATCH_MECHANISM", "endpoints")),
            "0.0.0.0:1051");

    assertThat(s.namespace()).contains("rl");
    assertThat(s.mechanism()).isEqualTo(KubernetesSettings.Mechanism.ENDPOINT_SLICES);
    assertThat(s.serviceName()).isEqualTo("gubernator");
    assertThat(s.selfAddress("0.0.0.0:1051")).isEqualTo("[fd00::5]:81");
  }

  @Test
  void fromEnv_podsWithoutSelector_rejectedNamingVariable() {
    assertThatThrownBy(
            () -> KubernetesSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_K8S_WATCH_MECHANISM", "pods")), "a:1"))
        .hasMessage("WEIR_K8S_SELECTOR='' is not valid: expected a label selector such as app=weir when WEIR_K8S_WATCH_MECHANISM=pods");
  }

  @Test
  void unusedSelectorWarning_selectorWithEndpointSlices_namesSelectorServiceAndFix() {
    KubernetesSettings s =
        KubernetesSettings.fromEnv(new DiscoveryEnv(Map.of("GUBER_K8S_SELECTOR", "app=gubernator")), "a:1");

    assertThat(s.unusedSelectorWarning())
        .contains(
            "WEIR_K8S_SELECTOR (or GUBER_K8S_SELECTOR) 'app=gubernator' is ignored: it selects the peer"
                + " pods only with WEIR_K8S_WATCH_MECHANISM=pods; with endpointslices (the default) the"
                + " peers are the ready endpoints of the Service 'weir-peers' (WEIR_K8S_SERVICE_NAME)."
                + " Set WEIR_K8S_WATCH_MECHANISM=pods to use the selector, or unset it");
  }

  @Test
  void unusedSelectorWarning_podsOrNoSelector_none() {
    assertThat(
            KubernetesSettings.fromEnv(
                    new DiscoveryEnv(Map.of("WEIR_K8S_SELECTOR", "app=weir", "WEIR_K8S_WATCH_MECHANISM", "pods")), "a:1")
                .unusedSelectorWarning())
        .isEmpty();
    assertThat(KubernetesSettings.fromEnv(new DiscoveryEnv(Map.of()), "a:1").unusedSelectorWarning()).isEmpty();
  }

  @Test
  void fromEnv_unknownMechanism_listsAllowed() {
    assertThatThrownBy(
            () -> KubernetesSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_K8S_WATCH_MECHANISM", "nodes")), "a:1"))
        .hasMessage("WEIR_K8S_WATCH_MECHANISM='nodes' is not valid: expected one of endpointslices, endpoints, pods");
  }
}
