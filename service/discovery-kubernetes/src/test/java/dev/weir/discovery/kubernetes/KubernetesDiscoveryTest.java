package dev.weir.discovery.kubernetes;

import static dev.weir.core.discovery.RecordingListener.eventually;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.discovery.DiscoveryEnv;
import dev.weir.core.discovery.RecordingListener;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

@EnableKubernetesMockClient(crud = true)
class KubernetesDiscoveryTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String NS = "weir";

  KubernetesClient client;
  private KubernetesDiscovery discovery;

  @AfterEach
  void close() {
    if (discovery != null) {
      discovery.close();
    }
  }

  @Test
  void endpointSlices_appearChangeReadinessDisappear_peersFollow() throws Exception {
    client.resource(emptySlice("weir-peers-0", "weir-peers")).create();
    RecordingListener peers = start(slicesSettings());
    assertThat(peers.received().get(0)).isEqualTo(Set.of("10.0.0.1:1051"));

    client.resource(slice("weir-peers-a", "weir-peers", "10.0.0.2", true, "10.0.0.3", false)).create();
    client.resource(slice("other-a", "other", "10.9.9.9", true, "10.9.9.8", true)).create();

    assertThat(eventually(WAIT, () -> peers.last().equals(Set.of("10.0.0.1:1051", "10.0.0.2:1051")))).isTrue();

    client.resource(slice("weir-peers-a", "weir-peers", "10.0.0.2", true, "10.0.0.3", true)).update();

    assertThat(eventually(WAIT, () -> peers.last().equals(Set.of("10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.3:1051"))))
        .isTrue();

    client.resource(slice("weir-peers-a", "weir-peers", "10.0.0.2", false, "10.0.0.3", true)).update();

    assertThat(eventually(WAIT, () -> peers.last().equals(Set.of("10.0.0.1:1051", "10.0.0.3:1051")))).isTrue();

    client.resource(slice("weir-peers-a", "weir-peers", "10.0.0.2", false, "10.0.0.3", true)).delete();

    assertThat(eventually(WAIT, () -> peers.last().equals(Set.of("10.0.0.1:1051")))).isTrue();
    assertThat(peers.received()).noneMatch(set -> set.contains("10.9.9.9:1051"));
    assertThat(discovery.problem()).isEmpty();
  }

  @Test
  void start_peersListed_returnsHavingDeliveredThemSoTheJoinSeesThem() throws Exception {
    client.resource(slice("weir-peers-a", "weir-peers", "10.0.0.2", true, "10.0.0.3", true)).create();
    discovery = new KubernetesDiscovery(client, false, slicesSettings(), "ignored:1");
    RecordingListener peers = new RecordingListener();

    discovery.start(peers);

    assertThat(peers.received())
        .as("the peer sets delivered when start() returns")
        .containsExactly(Set.of("10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.3:1051"));
  }

  @Test
  void pods_appearChangeReadinessDisappear_peersFollowAndSelfAlwaysIn() throws Exception {
    client.resource(pod("self", "10.0.0.1", false)).create();
    RecordingListener peers = start(podSettings());
    client.resource(pod("b", "10.0.0.2", true)).create();
    client.resource(pod("c", "10.0.0.3", false)).create();
    client.resource(new PodBuilder(pod("stranger", "10.0.0.9", true)).editMetadata().withLabels(java.util.Map.of("app", "x")).endMetadata().build()).create();

    assertThat(eventually(WAIT, () -> peers.last().equals(Set.of("10.0.0.1:1051", "10.0.0.2:1051")))).isTrue();

    client.resource(pod("c", "10.0.0.3", true)).update();

    assertThat(eventually(WAIT, () -> peers.last().size() == 3)).isTrue();

    client.resource(pod("b", "10.0.0.2", true)).delete();

    assertThat(eventually(WAIT, () -> peers.last().equals(Set.of("10.0.0.1:1051", "10.0.0.3:1051")))).isTrue();
    assertThat(peers.received()).noneMatch(set -> set.contains("10.0.0.9:1051"));
  }

  @Test
  void start_selectorWithEndpointSlices_warnsThatItIsIgnored() throws Exception {
    Logger log = (Logger) LoggerFactory.getLogger(KubernetesDiscovery.class);
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    log.addAppender(appender);
    client.resource(emptySlice("weir-peers-0", "weir-peers")).create();
    try {
      start(
          new KubernetesSettings(
              Optional.of(NS), KubernetesSettings.Mechanism.ENDPOINT_SLICES, "weir-peers", "app=weir",
              Optional.of("10.0.0.1"), 1051));
    } finally {
      log.detachAppender(appender);
    }

    assertThat(appender.list)
        .anySatisfy(
            e -> {
              assertThat(e.getLevel()).isEqualTo(Level.WARN);
              assertThat(e.getFormattedMessage())
                  .startsWith("WEIR_K8S_SELECTOR (or GUBER_K8S_SELECTOR) 'app=weir' is ignored");
            });
  }

  @Test
  void endpointSlices_serviceNameMatchesNoSlice_problemNamesVariableUntilASliceAppears() throws Exception {
    client.resource(emptySlice("other-0", "other")).create();
    Logger log = (Logger) LoggerFactory.getLogger(KubernetesDiscovery.class);
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    log.addAppender(appender);
    discovery = new KubernetesDiscovery(client, false, slicesSettings(), "ignored:1");
    try {
      discovery.start(new RecordingListener());

      assertThat(eventually(WAIT, () -> discovery.problem().startsWith("WEIR_K8S_SERVICE_NAME")))
        .as("problem() once listed: '%s'", discovery.problem())
        .isTrue();
    } finally {
      log.detachAppender(appender);
    }

    String expected =
        "WEIR_K8S_SERVICE_NAME=weir-peers matches no EndpointSlice in namespace weir (none is labelled"
            + " kubernetes.io/service-name=weir-peers): check that the Service exists under that name"
            + " and has a selector; this node stays alone until one does";
    assertThat(discovery.problem()).isEqualTo(expected);
    assertThat(appender.list)
        .anySatisfy(
            e -> {
              assertThat(e.getLevel()).isEqualTo(Level.WARN);
              assertThat(e.getFormattedMessage()).isEqualTo(expected);
            });

    client.resource(emptySlice("weir-peers-0", "weir-peers")).create();

    assertThat(eventually(WAIT, () -> discovery.problem().isEmpty())).isTrue();
  }

  @Test
  void pods_selectorMatchesNoPodWithOwnIp_problemNamesVariableUntilOwnPodIsListed() throws Exception {
    client.resource(pod("b", "10.0.0.2", true)).create();
    discovery = new KubernetesDiscovery(client, false, podSettings(), "ignored:1");
    RecordingListener peers = new RecordingListener();
    discovery.start(peers);

    assertThat(eventually(WAIT, () -> discovery.problem().startsWith("WEIR_K8S_SELECTOR")))
        .as("problem() once listed: '%s'", discovery.problem())
        .isTrue();
    assertThat(discovery.problem())
        .isEqualTo(
            "WEIR_K8S_SELECTOR=app=weir matches no pod with this node's IP 10.0.0.1 in namespace weir:"
                + " the selector must select this node's own pod; this node's peers are not those of the"
                + " pods it selects");

    client.resource(pod("self", "10.0.0.1", false)).create();

    assertThat(eventually(WAIT, () -> discovery.problem().isEmpty())).isTrue();
    assertThat(peers.last()).isEqualTo(Set.of("10.0.0.1:1051", "10.0.0.2:1051"));
  }

  @Test
  void endpointSlices_guberServiceNameMatchesNoSlice_problemNamesTheGuberVariable() throws Exception {
    client.resource(emptySlice("other-0", "other")).create();
    KubernetesSettings settings =
        KubernetesSettings.fromEnv(
            new DiscoveryEnv(
                Map.of(
                    "GUBER_PEER_DISCOVERY_TYPE", "k8s",
                    "GUBER_K8S_SERVICE_NAME", "weir-peer",
                    "GUBER_K8S_POD_IP", "10.0.0.1")),
            "0.0.0.0:1051");
    discovery = new KubernetesDiscovery(client, false, settings, "ignored:1");

    discovery.start(new RecordingListener());

    assertThat(eventually(WAIT, () -> !discovery.problem().isEmpty())).isTrue();
    assertThat(discovery.problem()).startsWith("GUBER_K8S_SERVICE_NAME=weir-peer matches no EndpointSlice");
  }

  @Test
  void pods_guberSelectorMatchesNoPod_problemNamesTheGuberVariable() throws Exception {
    client.resource(pod("b", "10.0.0.2", true)).create();
    KubernetesSettings settings =
        KubernetesSettings.fromEnv(
            new DiscoveryEnv(
                Map.of(
                    "GUBER_K8S_NAMESPACE", NS,
                    "GUBER_K8S_WATCH_MECHANISM", "pods",
                    "GUBER_K8S_SELECTOR", "app=weir",
                    "GUBER_K8S_POD_IP", "10.0.0.1")),
            "0.0.0.0:1051");
    discovery = new KubernetesDiscovery(client, false, settings, "ignored:1");

    discovery.start(new RecordingListener());

    assertThat(eventually(WAIT, () -> !discovery.problem().isEmpty())).isTrue();
    assertThat(discovery.problem()).startsWith("GUBER_K8S_SELECTOR=app=weir matches no pod");
  }

  @Test
  void selfAddress_podIpSet_isPodIpAndPodPort() {
    discovery = new KubernetesDiscovery(client, false, slicesSettings(), "0.0.0.0:1051");

    assertThat(discovery.selfAddress()).isEqualTo("10.0.0.1:1051");
  }

  /**
   * Starts discovery and waits until its informer watches: the mock API server keeps no history, so
   * (unlike a real one) it cannot replay what changed between the informer's list and its watch.
   */
  private RecordingListener start(KubernetesSettings settings) throws InterruptedException {
    discovery = new KubernetesDiscovery(client, false, settings, "ignored:1");
    RecordingListener peers = new RecordingListener();
    discovery.start(peers);
    assertThat(eventually(WAIT, () -> discovery.problem().isEmpty())).isTrue();
    return peers;
  }

  static KubernetesSettings slicesSettings() {
    return new KubernetesSettings(
        Optional.of(NS), KubernetesSettings.Mechanism.ENDPOINT_SLICES, "weir-peers", "", Optional.of("10.0.0.1"), 1051);
  }

  private static KubernetesSettings podSettings() {
    return new KubernetesSettings(
        Optional.of(NS), KubernetesSettings.Mechanism.PODS, "", "app=weir", Optional.of("10.0.0.1"), 1051);
  }

  static EndpointSlice slice(String name, String service, String ip1, boolean ready1, String ip2, boolean ready2) {
    return new EndpointSliceBuilder()
        .withNewMetadata()
        .withName(name)
        .withNamespace(NS)
        .addToLabels(KubernetesDiscovery.SERVICE_NAME_LABEL, service)
        .endMetadata()
        .withAddressType("IPv4")
        .addNewEndpoint()
        .withAddresses(ip1)
        .withNewConditions()
        .withReady(ready1)
        .endConditions()
        .endEndpoint()
        .addNewEndpoint()
        .withAddresses(ip2)
        .withNewConditions()
        .withReady(ready2)
        .endConditions()
        .endEndpoint()
        .build();
  }

  /** Returns a slice of {@code service} without endpoints, as the control plane keeps for a Service without ready pods. */
  static EndpointSlice emptySlice(String name, String service) {
    return new EndpointSliceBuilder()
        .withNewMetadata()
        .withName(name)
        .withNamespace(NS)
        .addToLabels(KubernetesDiscovery.SERVICE_NAME_LABEL, service)
        .endMetadata()
        .withAddressType("IPv4")
        .build();
  }

  private static Pod pod(String name, String ip, boolean ready) {
    return new PodBuilder()
        .withNewMetadata()
        .withName(name)
        .withNamespace(NS)
        .addToLabels("app", "weir")
        .endMetadata()
        .withNewStatus()
        .withPhase("Running")
        .withPodIP(ip)
        .addNewContainerStatus()
        .withName("weir")
        .withReady(ready)
        .withNewState()
        .withNewRunning()
        .endRunning()
        .endState()
        .endContainerStatus()
        .endStatus()
        .build();
  }
}
