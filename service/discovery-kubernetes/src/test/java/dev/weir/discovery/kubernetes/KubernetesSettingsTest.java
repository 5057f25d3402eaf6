package dev.weir.discovery.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.discovery.DiscoveryEnv;
import java.util.List;
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
  void fromEnv_guberPodsWithoutSelector_rejectedNamingTheGuberVariables() {
    assertThatThrownBy(
            () -> KubernetesSettings.fromEnv(new DiscoveryEnv(Map.of("GUBER_K8S_WATCH_MECHANISM", "pods")), "a:1"))
        .hasMessage("WEIR_K8S_SELECTOR='' is not valid: expected a label selector such as app=weir when GUBER_K8S_WATCH_MECHANISM=pods");
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

  @Test
  void fromEnv_malformedSelector_rejectedNamingVariableAndValue() {
    for (String selector : List.of("app==weir,", "app in weir", "app=weir peers", "app=(weir)", "=weir", "app=-weir", "!", "x>99999999999999999999", "x>-1")) {
      assertThatThrownBy(() -> KubernetesSettings.fromEnv(pods("GUBER_K8S_SELECTOR", selector), "a:1"))
          .as(selector)
          .isInstanceOf(ConfigException.class)
          .hasMessageStartingWith(
              "GUBER_K8S_SELECTOR='" + selector + "' is not valid: expected a Kubernetes label selector:"
                  + " comma-separated requirements such as app=weir, app!=old, app in (a,b), app notin (a,b),"
                  + " app or !app (");
    }
    assertThatThrownBy(() -> KubernetesSettings.fromEnv(pods("WEIR_K8S_SELECTOR", "app in weir"), "a:1"))
        .hasMessageEndingWith("(after 'app in': expected '(' but found 'weir')");
    assertThatThrownBy(() -> KubernetesSettings.fromEnv(pods("WEIR_K8S_SELECTOR", "x>-1"), "a:1"))
        .hasMessageEndingWith(
            "('-1' after '>' is not an integer from 0 to 9223372036854775807: the API server takes"
                + " a label value, digits only)");
    assertThatThrownBy(
            () -> KubernetesSettings.fromEnv(pods("WEIR_K8S_SELECTOR", "x<99999999999999999999"), "a:1"))
        .hasMessageEndingWith(
            "('99999999999999999999' after '<' is not an integer from 0 to 9223372036854775807: the API"
                + " server takes a label value, digits only)");
  }

  @Test
  void fromEnv_wellFormedSelectors_accepted() {
    for (String selector :
        List.of(
            "app=weir",
            "app==weir,tier!=db",
            "app in (weir, weir-canary),!legacy",
            "environment",
            "app.kubernetes.io/name=weir",
            "app=",
            "app notin (),x>1",
            "x<9223372036854775807,y>007")) {
      assertThat(KubernetesSettings.fromEnv(pods("WEIR_K8S_SELECTOR", selector), "a:1").selector())
          .isEqualTo(selector);
    }
  }

  @Test
  void fromEnv_serviceNameNotAServiceName_rejectedNamingVariableAndValue() {
    for (String name : List.of("weir peers", "Weir", "weir_peers", "-weir")) {
      assertThatThrownBy(
              () -> KubernetesSettings.fromEnv(new DiscoveryEnv(Map.of("WEIR_K8S_SERVICE_NAME", name)), "a:1"))
          .as(name)
          .isInstanceOf(ConfigException.class)
          .hasMessage(
              "WEIR_K8S_SERVICE_NAME='" + name + "' is not valid: expected a Service name: up to 63"
                  + " lower-case letters, digits and '-', starting with a letter and ending with a letter or"
                  + " digit");
    }
  }

  @Test
  void fromEnv_namespaceNotDns1123Label_rejectedNamingVariableAndValue() {
    assertThatThrownBy(() -> KubernetesSettings.fromEnv(new DiscoveryEnv(Map.of("GUBER_K8S_NAMESPACE", "My_NS")), "a:1"))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "GUBER_K8S_NAMESPACE='My_NS' is not valid: expected a namespace name: up to 63 lower-case"
                + " letters, digits and '-', starting and ending with a letter or digit");
  }

  private static DiscoveryEnv pods(String variable, String selector) {
    return new DiscoveryEnv(Map.of("WEIR_K8S_WATCH_MECHANISM", "pods", variable, selector));
  }
}
