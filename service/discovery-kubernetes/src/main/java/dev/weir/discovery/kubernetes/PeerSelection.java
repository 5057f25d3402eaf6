package dev.weir.discovery.kubernetes;

import dev.weir.core.config.IpText;
import dev.weir.core.discovery.PeerAddress;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.discovery.v1.Endpoint;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/** Pure rules that turn watched Kubernetes objects into peer addresses. */
final class PeerSelection {
  private PeerSelection() {}

  /**
   * Returns {@code ip:port} of every ready IPv4/IPv6 endpoint in {@code slices} (an endpoint whose
   * {@code ready} condition is unset counts as ready, as the API specifies). A dual-stack Service
   * has a slice of each family listing the same pods: then only the addresses of {@code family}
   * ({@code IPv4} or {@code IPv6}, the family this node advertises itself in) are taken, so that each
   * pod is one member, even while no endpoint of that family is ready (the other family's slice may
   * not be updated yet). Without a slice of {@code family} that lists an endpoint, ready or not (a
   * single-stack Service of the other family, maybe with an empty placeholder slice), the other
   * family's addresses are taken.
   */
  static Set<String> fromEndpointSlices(Collection<EndpointSlice> slices, int port, String family) {
    Set<String> v4 = new TreeSet<>();
    Set<String> v6 = new TreeSet<>();
    boolean ownFamilyListed = false;
    for (EndpointSlice slice : slices) {
      String type = String.valueOf(slice.getAddressType());
      Set<String> peers =
          switch (type) {
            case "IPv4" -> v4;
            case "IPv6" -> v6;
            default -> null;
          };
      if (peers == null) {
        continue;
      }
      for (Endpoint endpoint : Optional.ofNullable(slice.getEndpoints()).orElse(List.of())) {
        ownFamilyListed |= type.equals(family);
        boolean ready =
            endpoint.getConditions() == null
                || !Boolean.FALSE.equals(endpoint.getConditions().getReady());
        if (ready) {
          for (String address : Optional.ofNullable(endpoint.getAddresses()).orElse(List.of())) {
            peers.add(peerAddress(address, port));
          }
        }
      }
    }
    if (!ownFamilyListed) {
      v4.addAll(v6);
      return v4;
    }
    return "IPv6".equals(family) ? v6 : v4;
  }

  /** Returns the family, {@code IPv4} or {@code IPv6}, of the peer address {@code self}. */
  static String familyOf(String self) {
    return self.startsWith("[") ? "IPv6" : "IPv4";
  }

  // ip:port with the IP spelled as nodes advertise themselves (RFC 5952 for IPv6).
  private static String peerAddress(String ip, int port) {
    return PeerAddress.of(IpText.literal(ip).map(IpText::of).orElse(ip), port);
  }

  /**
   * Returns {@code podIP:port} of every pod that is running with all containers ready and running
   * and is not terminating (no deletion timestamp: its containers stay ready until its readiness
   * probe next fails, while it is already handing off and leaving); the pod with IP {@code selfIp}
   * is kept whatever its state, its IP compared as {@link IpText#canonical} spells both.
   */
  static Set<String> fromPods(Collection<Pod> pods, int port, Optional<String> selfIp) {
    Set<String> peers = new TreeSet<>();
    for (Pod pod : pods) {
      if (pod.getStatus() == null || pod.getStatus().getPodIP() == null || pod.getStatus().getPodIP().isEmpty()) {
        continue;
      }
      String ip = pod.getStatus().getPodIP();
      if (isSelf(ip, selfIp) || isServing(pod)) {
        peers.add(peerAddress(ip, port));
      }
    }
    return peers;
  }

  /**
   * Returns true when the pod IP {@code podIp} (null while the pod has none) is this node's
   * {@code selfIp}, both as {@link IpText#canonical} spells them; false without {@code selfIp}.
   */
  static boolean isSelf(String podIp, Optional<String> selfIp) {
    return selfIp.isPresent() && podIp != null && IpText.canonical(podIp).equals(selfIp);
  }

  private static boolean isServing(Pod pod) {
    if (pod.getMetadata() != null && pod.getMetadata().getDeletionTimestamp() != null) {
      return false;
    }
    if (!"Running".equals(pod.getStatus().getPhase())) {
      return false;
    }
    List<ContainerStatus> statuses = Optional.ofNullable(pod.getStatus().getContainerStatuses()).orElse(List.of());
    if (statuses.isEmpty()) {
      return false;
    }
    for (ContainerStatus status : statuses) {
      if (!Boolean.TRUE.equals(status.getReady())
          || status.getState() == null
          || status.getState().getRunning() == null) {
        return false;
      }
    }
    return true;
  }
}
