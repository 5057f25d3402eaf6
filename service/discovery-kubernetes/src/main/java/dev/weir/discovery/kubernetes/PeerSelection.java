package dev.weir.discovery.kubernetes;

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
   * {@code ready} condition is unset counts as ready, as the API specifies).
   */
  static Set<String> fromEndpointSlices(Collection<EndpointSlice> slices, int port) {
    Set<String> peers = new TreeSet<>();
    for (EndpointSlice slice : slices) {
      if (!"IPv4".equals(slice.getAddressType()) && !"IPv6".equals(slice.getAddressType())) {
        continue;
      }
      for (Endpoint endpoint : Optional.ofNullable(slice.getEndpoints()).orElse(List.of())) {
        boolean ready =
            endpoint.getConditions() == null
                || !Boolean.FALSE.equals(endpoint.getConditions().getReady());
        if (ready) {
          for (String address : Optional.ofNullable(endpoint.getAddresses()).orElse(List.of())) {
            peers.add(PeerAddress.of(address, port));
          }
        }
      }
    }
    return peers;
  }

  /**
   * Returns {@code podIP:port} of every pod that is running with all containers ready and running;
   * the pod with IP {@code selfIp} is kept whatever its state.
   */
  static Set<String> fromPods(Collection<Pod> pods, int port, Optional<String> selfIp) {
    Set<String> peers = new TreeSet<>();
    for (Pod pod : pods) {
      if (pod.getStatus() == null || pod.getStatus().getPodIP() == null || pod.getStatus().getPodIP().isEmpty()) {
        continue;
      }
      String ip = pod.getStatus().getPodIP();
      if (selfIp.filter(ip::equals).isPresent() || isServing(pod)) {
        peers.add(PeerAddress.of(ip, port));
      }
    }
    return peers;
  }

  private static boolean isServing(Pod pod) {
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
