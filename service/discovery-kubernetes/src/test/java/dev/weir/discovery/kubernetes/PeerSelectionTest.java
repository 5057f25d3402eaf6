package dev.weir.discovery.kubernetes;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class PeerSelectionTest {

  @Test
  void isSelf_podIpSpelledAnyWay_comparedCanonically_falseWithoutEitherIp() {
    assertThat(PeerSelection.isSelf("FD00:0:0:0:0:0:0:5", Optional.of("fd00::5"))).isTrue();
    assertThat(PeerSelection.isSelf("10.0.0.5", Optional.of("10.0.0.5"))).isTrue();
    assertThat(PeerSelection.isSelf("10.0.0.6", Optional.of("10.0.0.5"))).isFalse();
    assertThat(PeerSelection.isSelf(null, Optional.of("10.0.0.5"))).isFalse();
    assertThat(PeerSelection.isSelf("not-an-ip", Optional.empty())).isFalse();
    assertThat(PeerSelection.isSelf("10.0.0.5", Optional.empty())).isFalse();
  }

  @Test
  void fromEndpointSlices_unsetReadyCountsReady_fqdnSlicesSkipped_ipv6Bracketed() {
    var v6 = new EndpointSliceBuilder().withAddressType("IPv6").addNewEndpoint().withAddresses("fd00::2").endEndpoint().build();
    var fqdn = new EndpointSliceBuilder().withAddressType("FQDN").addNewEndpoint().withAddresses("a.example").endEndpoint().build();
    var empty = new EndpointSliceBuilder().withAddressType("IPv4").build();

    assertThat(PeerSelection.fromEndpointSlices(List.of(v6, fqdn, empty), 1051, "IPv4")).containsExactly("[fd00::2]:1051");
  }

  @Test
  void fromEndpointSlices_dualStackService_eachPodOnceInTheFamilyThisNodeAdvertises() {
    var v4 = new EndpointSliceBuilder().withAddressType("IPv4").addNewEndpoint().withAddresses("10.0.0.2").endEndpoint().build();
    var v6 = new EndpointSliceBuilder().withAddressType("IPv6").addNewEndpoint().withAddresses("fd00::2").endEndpoint().build();

    assertThat(PeerSelection.fromEndpointSlices(List.of(v4, v6), 1051, PeerSelection.familyOf("10.0.0.1:1051")))
        .containsExactly("10.0.0.2:1051");
    assertThat(PeerSelection.fromEndpointSlices(List.of(v4, v6), 1051, PeerSelection.familyOf("[fd00::1]:1051")))
        .containsExactly("[fd00::2]:1051");
  }

  @Test
  void fromEndpointSlices_ipv6SpelledLongHand_spelledAsNodesAdvertiseThemselves() {
    var v6 = new EndpointSliceBuilder().withAddressType("IPv6").addNewEndpoint().withAddresses("FD00:0:0:0:0:0:0:2").endEndpoint().build();

    assertThat(PeerSelection.fromEndpointSlices(List.of(v6), 1051, "IPv6")).containsExactly("[fd00::2]:1051");
  }

  /**
   * The two slices of a dual-stack Service change one after the other: while every endpoint of
   * this node's family is unready, the other family's slice may still list ready ones, which are
   * the same pods under addresses no node advertises itself by.
   */
  @Test
  void fromEndpointSlices_dualStack_noReadyEndpointOfThisFamily_noneOfTheOtherFamily() {
    var v4 =
        new EndpointSliceBuilder().withAddressType("IPv4")
            .addNewEndpoint().withAddresses("10.0.0.2").withNewConditions().withReady(false)
            .endConditions().endEndpoint().build();
    var v6 = new EndpointSliceBuilder().withAddressType("IPv6").addNewEndpoint().withAddresses("fd00::2").endEndpoint().build();

    assertThat(PeerSelection.fromEndpointSlices(List.of(v4, v6), 1051, "IPv4")).isEmpty();
    assertThat(PeerSelection.fromEndpointSlices(List.of(v6, v4), 1051, "IPv6"))
        .containsExactly("[fd00::2]:1051");
    assertThat(PeerSelection.fromEndpointSlices(List.of(v6), 1051, "IPv4"))
        .containsExactly("[fd00::2]:1051");
  }

  /** The API server may spell a pod's IPv6 address otherwise than WEIR_K8S_POD_IP does. */
  @Test
  void fromPods_selfIpSpelledOtherwise_stillThisNode() {
    Pod selfPending =
        new PodBuilder().withNewStatus().withPhase("Pending").withPodIP("FD00:0:0:0:0:0:0:1").endStatus().build();

    assertThat(PeerSelection.fromPods(List.of(selfPending), 1051, Optional.of("fd00::1")))
        .containsExactly("[fd00::1]:1051");
  }

  @Test
  void fromPods_pendingOrNotRunningOrNoIp_skipped() {
    Pod pending = new PodBuilder().withNewStatus().withPhase("Pending").withPodIP("10.0.0.2").endStatus().build();
    Pod waiting =
        new PodBuilder().withNewStatus().withPhase("Running").withPodIP("10.0.0.3")
            .addNewContainerStatus().withReady(true).withNewState().withNewWaiting().endWaiting().endState().endContainerStatus()
            .endStatus().build();
    Pod noIp = new PodBuilder().withNewStatus().withPhase("Running").endStatus().build();
    Pod selfPending = new PodBuilder().withNewStatus().withPhase("Pending").withPodIP("10.0.0.1").endStatus().build();

    assertThat(PeerSelection.fromPods(List.of(pending, waiting, noIp, selfPending), 1051, Optional.of("10.0.0.1")))
        .containsExactly("10.0.0.1:1051");
  }

  @Test
  void fromPods_terminatingPodStillReady_skippedButThisNodeKept() {
    Pod terminating = servingPod("10.0.0.2", "2026-12-07T08:00:00Z");
    Pod serving = servingPod("10.0.0.3", null);
    Pod selfTerminating = servingPod("10.0.0.1", "2026-12-07T08:00:00Z");

    assertThat(
            PeerSelection.fromPods(
                List.of(terminating, serving, selfTerminating), 1051, Optional.of("10.0.0.1")))
        .containsExactly("10.0.0.1:1051", "10.0.0.3:1051");
  }

  private static Pod servingPod(String ip, String deletionTimestamp) {
    return new PodBuilder()
        .withNewMetadata().withDeletionTimestamp(deletionTimestamp).endMetadata()
        .withNewStatus().withPhase("Running").withPodIP(ip)
        .addNewContainerStatus().withReady(true).withNewState().withNewRunning().endRunning()
        .endState().endContainerStatus()
        .endStatus().build();
  }
}
