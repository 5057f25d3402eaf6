package dev.weir.discovery.kubernetes;

import dev.weir.core.discovery.DiscoveryEnv;
import dev.weir.core.config.IpText;
import dev.weir.core.discovery.PeerAddress;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The settings of Kubernetes discovery.
 *
 * @param namespace namespace to watch, empty for the client's (in a pod: the pod's own namespace)
 * @param mechanism what to watch
 * @param serviceName service whose EndpointSlices list the peers ({@link Mechanism#ENDPOINT_SLICES})
 * @param selector label selector of peer pods ({@link Mechanism#PODS})
 * @param podIp this pod's IP (downward API {@code status.podIP}), empty if unknown
 * @param podPort gRPC port of every peer pod
 * @param serviceNameVariable the variable {@code serviceName} was read from, named in its problems
 * @param selectorVariable the variable {@code selector} was read from, named in its problems
 */
public record KubernetesSettings(
    Optional<String> namespace,
    Mechanism mechanism,
    String serviceName,
    String selector,
    Optional<String> podIp,
    int podPort,
    String serviceNameVariable,
    String selectorVariable) {

  /** The default service name, matching the headless Service in {@code manifests/base}. */
  public static final String DEFAULT_SERVICE_NAME = "weir-peers";

  // A DNS-1123 label, the form of a namespace name.
  private static final Pattern DNS_LABEL = Pattern.compile("(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  // A DNS-1035 label, the form of a Service name.
  private static final Pattern SERVICE_NAME = Pattern.compile("(?=.{1,63}$)[a-z]([-a-z0-9]*[a-z0-9])?");

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

  /** Creates settings whose service name and selector are named by their {@code WEIR_*} variables. */
  public KubernetesSettings(
      Optional<String> namespace,
      Mechanism mechanism,
      String serviceName,
      String selector,
      Optional<String> podIp,
      int podPort) {
    this(
        namespace,
        mechanism,
        serviceName,
        selector,
        podIp,
        podPort,
        "WEIR_K8S_SERVICE_NAME",
        "WEIR_K8S_SELECTOR");
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
      throw env.invalid(
          "K8S_SELECTOR",
          "",
          "a label selector such as app=weir when " + env.name("K8S_WATCH_MECHANISM") + "=pods");
    }
    if (m == Mechanism.PODS) {
      LabelSelectorSyntax.problem(selector)
          .ifPresent(
              problem -> {
                throw env.invalid(
                    "K8S_SELECTOR",
                    selector,
                    "a Kubernetes label selector: comma-separated requirements such as app=weir,"
                        + " app!=old, app in (a,b), app notin (a,b), app or !app (" + problem + ")");
              });
    }
    Optional<String> namespace = env.raw("K8S_NAMESPACE");
    if (namespace.isPresent() && !DNS_LABEL.matcher(namespace.get()).matches()) {
      throw env.invalid(
          "K8S_NAMESPACE",
          namespace.get(),
          "a namespace name: up to 63 lower-case letters, digits and '-', starting and ending with a"
              + " letter or digit");
    }
    String serviceName = env.string("K8S_SERVICE_NAME", DEFAULT_SERVICE_NAME);
    if (m == Mechanism.ENDPOINT_SLICES && !SERVICE_NAME.matcher(serviceName).matches()) {
      throw env.invalid(
          "K8S_SERVICE_NAME",
          serviceName,
          "a Service name: up to 63 lower-case letters, digits and '-', starting with a letter and"
              + " ending with a letter or digit");
    }
    return new KubernetesSettings(
        namespace,
        m,
        serviceName,
        selector,
        podIp(env),
        env.port("K8S_POD_PORT", PeerAddress.portOf(advertiseAddress)),
        env.name("K8S_SERVICE_NAME"),
        env.name("K8S_SELECTOR"));
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
