package dev.weir.helm;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.TopologySpreadConstraint;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The chart and the kustomize base in {@code manifests/base} render the same Deployment for equal
 * settings: the chart's defaults, released as {@code weir} in namespace {@code weir}.
 */
class KustomizeDriftTest {
  private static final Path BASE = Chart.REPO.resolve("manifests/base");

  private final Rendered chart = Chart.render("");

  @Test
  void environment_sameNamesAndValues() throws IOException {
    Map<String, String> base = new LinkedHashMap<>();
    for (EnvVar e : baseContainer().getEnv()) {
      base.put(e.getName(), Rendered.describe(e));
    }

    assertThat(chart.env()).containsExactlyEntriesOf(base);
  }

  @Test
  void portsProbesImageAndResources_same() throws IOException {
    Container base = baseContainer();
    Container weir = chart.weir();

    assertThat(weir.getPorts()).isEqualTo(base.getPorts());
    assertThat(weir.getLivenessProbe()).isEqualTo(withHttpScheme(base.getLivenessProbe()));
    assertThat(weir.getReadinessProbe()).isEqualTo(withHttpScheme(base.getReadinessProbe()));
    assertThat(weir.getStartupProbe()).isEqualTo(withHttpScheme(base.getStartupProbe()));
    assertThat(weir.getImage()).isEqualTo(base.getImage());
    assertThat(weir.getImagePullPolicy()).isEqualTo(base.getImagePullPolicy());
    assertThat(weir.getResources()).isEqualTo(base.getResources());
    assertThat(weir.getArgs()).isEqualTo(base.getArgs());
  }

  @Test
  void securityContextsMountsAndGracePeriod_same() throws IOException {
    PodSpec base = baseDeployment().getSpec().getTemplate().getSpec();
    PodSpec pod = chart.deployment().getSpec().getTemplate().getSpec();

    assertThat(pod.getSecurityContext()).isEqualTo(base.getSecurityContext());
    assertThat(chart.weir().getSecurityContext())
        .isEqualTo(base.getContainers().get(0).getSecurityContext());
    assertThat(chart.weir().getVolumeMounts())
        .isEqualTo(base.getContainers().get(0).getVolumeMounts());
    assertThat(pod.getTerminationGracePeriodSeconds())
        .isEqualTo(base.getTerminationGracePeriodSeconds());
    assertThat(pod.getServiceAccountName()).isEqualTo(base.getServiceAccountName());
    assertThat(pod.getEnableServiceLinks()).isEqualTo(base.getEnableServiceLinks());
    assertThat(chart.deployment().getSpec().getReplicas())
        .isEqualTo(baseDeployment().getSpec().getReplicas());
  }

  @Test
  void configServicesAndDiscoveryRule_same() throws IOException {
    ConfigMap base = only(ConfigMap.class, "configmap.yaml");
    Role role = only(Role.class, "role.yaml");

    assertThat(chart.only(ConfigMap.class).getData()).isEqualTo(base.getData());
    assertThat(chart.only(ConfigMap.class).getMetadata().getName())
        .isEqualTo(base.getMetadata().getName());
    assertThat(role.getRules()).contains(chart.only(Role.class).getRules().get(0));
    for (String file : List.of("service.yaml", "service-peers.yaml")) {
      Service service = only(Service.class, file);
      Service rendered =
          chart.all(Service.class).stream()
              .filter(s -> s.getMetadata().getName().equals(service.getMetadata().getName()))
              .findFirst()
              .orElseThrow(
                  () -> new AssertionError("no Service " + service.getMetadata().getName()));
      assertThat(rendered.getSpec().getPorts()).as(file).isEqualTo(service.getSpec().getPorts());
      assertThat(rendered.getSpec().getClusterIP()).isEqualTo(service.getSpec().getClusterIP());
    }
  }

  @Test
  void topologySpread_same_andSelectingTheBasesPods() throws IOException {
    PodTemplateSpec base = baseDeployment().getSpec().getTemplate();
    List<TopologySpreadConstraint> baseSpread = base.getSpec().getTopologySpreadConstraints();
    List<TopologySpreadConstraint> chartSpread =
        chart.deployment().getSpec().getTemplate().getSpec().getTopologySpreadConstraints();

    assertThat(baseSpread).isNotEmpty();
    assertThat(baseSpread)
        .extracting(c -> List.of(c.getTopologyKey(), c.getMaxSkew(), c.getWhenUnsatisfiable()))
        .isEqualTo(
            chartSpread.stream()
                .map(c -> List.of(c.getTopologyKey(), c.getMaxSkew(), c.getWhenUnsatisfiable()))
                .toList());
    assertThat(baseSpread)
        .allSatisfy(
            c ->
                assertThat(base.getMetadata().getLabels())
                    .containsAllEntriesOf(c.getLabelSelector().getMatchLabels()));
  }

  /** The base's probes leave the scheme to its default, HTTP, which the chart writes out. */
  private static io.fabric8.kubernetes.api.model.Probe withHttpScheme(
      io.fabric8.kubernetes.api.model.Probe probe) {
    probe.getHttpGet().setScheme("HTTP");
    return probe;
  }

  private static Container baseContainer() throws IOException {
    return baseDeployment().getSpec().getTemplate().getSpec().getContainers().get(0);
  }

  private static Deployment baseDeployment() throws IOException {
    return only(Deployment.class, "deployment.yaml");
  }

  private static <T extends HasMetadata> T only(Class<T> type, String file) throws IOException {
    return type.cast(
        Serialization.unmarshal(Files.readString(BASE.resolve(file)), HasMetadata.class));
  }
}
