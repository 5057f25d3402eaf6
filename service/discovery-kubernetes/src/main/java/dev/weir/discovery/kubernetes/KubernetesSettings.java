package dev.weir.discovery.kubernetes;

import dev.weir.core.discovery.DiscoveryEnv;
import dev.weir.core.config.IpText;
import dev.weir.core.discovery.PeerAddress;
import java.util.List;
import java.util.Optional;

/**
 * The settings of Kubernetes discovery.
 *
 * @param namespace namespace to watch, empty for the client's (in a pod: the pod's own namespace)
 * @param mechanism what to watch
 * @param serviceName service whose EndpointSlices list the peers ({@link Mechanism#ENDPOINT_SLICES})
 * @param selector label selector of peer pods ({@link Mechanism#PODS})
 * @param podIp this pod's IP (downward API {@code status.podIP}), empty if unknown
 * @param podPort gRPC port of every peer pod
 */
public record KubernetesSettings(
    Optional<String> namespace,
    Mechanism mechanism,
    String serviceName,
    String selector,
    Optional<String> podIp,
    int podPort) {

  /** The default service name, matching the headless Service in {@code manifests/base}. */
  public static final String DEFAULT_SERVICE_NAME = "weir-peers";

  /** What Kubernetes discovery watches. */
  public enum Mechanism {
    /** EndpointSlices labelled {@code kubernetes.io/service-name=<service>}; ready endpoints are peers. */
    ENDPOINT_SLICES,
    /** Pods matching a label selector; running pods whose containers are all ready are peers. */
    PODS
  }

  /** Creates settings, requiring a selector for {@link Mechanism#PODS}. */
  public KubernetesSettings {
    if (mechanism == Mechanism.PODS && selector.isBlank()) {
      throw new IllegalArgumentException("a pod label selector is required when watching pods");
    }
  }

  /**
   * Reads {@code WEIR_K8S_*} (or {@code GUBER_K8S_*}) settings; {@code advertiseAddress} supplies the
   * default pod port.
   */
  public static KubernetesSettings fromEnv(DiscoveryEnv env, String advertiseAddress) {
    String mechanism = env.oneOf("K8S_WATCH_MECHANISM", "endpointslices", List.of("endpointslices", "endpoints", "pods"));
    Mechanism m = mechanism.equals("pods") ? Mechanism.PODS : Mechanism.ENDPOINT_SLICES;
    String selector = env.string("K8S_SELECTOR", "");
    if (m == Mechanism.PODS && selector.isEmpty()) {
      throw env.invalid("K8S_SELECTOR", "", "a label selector such as app=weir when WEIR_K8S_WATCH_MECHANISM=pods");
    }
    return new KubernetesSettings(
        env.raw("K8S_NAMESPACE"),
        m,
        env.string("K8S_SERVICE_NAME", DEFAULT_SERVICE_NAME),
        selector,
        podIp(env),
        env.port("K8S_POD_PORT", PeerAddress.portOf(advertiseAddress)));
  }

  // The pod IP as peers spell it; anything but an IP literal (an unresolved $(POD_IP) included) is
  // refused, as it would put this node on its own ring under a name no other node knows.
  private static Optional<String> podIp(DiscoveryEnv env) {
    Optional<String> raw = env.raw("K8S_POD_IP");
    if (raw.isEmpty()) {
      return raw;
    }
    return Optional.of(
        IpText.canonical(raw.get())
            .orElseThrow(() -> env.invalid("K8S_POD_IP", raw.get(), IpText.POD_IP_ALLOWED)));
  }

  /**
   * Returns the start-up warning for a selector set while EndpointSlices are watched, which it does
   * not filter: Gubernator's own manifests set one with its default mechanism, so it is a warning
   * rather than an error.
   */
  public Optional<String> unusedSelectorWarning() {
    if (mechanism == Mechanism.PODS || selector.isBlank()) {
      return Optional.empty();
    }
    return Optional.of(
        "WEIR_K8S_SELECTOR (or GUBER_K8S_SELECTOR) '"
            + selector
            + "' is ignored: it selects the peer pods only with WEIR_K8S_WATCH_MECHANISM=pods; with"
            + " endpointslices (the default) the peers are the ready endpoints of the Service '"
            + serviceName
            + "' (WEIR_K8S_SERVICE_NAME). Set WEIR_K8S_WATCH_MECHANISM=pods to use the selector,"
            + " or unset it");
  }

  /** Returns this node's peer address: {@code podIp:podPort}, or {@code advertiseAddress} without a pod IP. */
  public String selfAddress(String advertiseAddress) {
    return podIp.map(ip -> PeerAddress.of(ip, podPort)).orElse(advertiseAddress);
  }
}
