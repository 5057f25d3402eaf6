package dev.weir.server;

import dev.weir.core.discovery.DiscoveryEnv;
import dev.weir.core.discovery.dns.DnsSettings;
import dev.weir.discovery.etcd.EtcdSettings;
import dev.weir.discovery.kubernetes.KubernetesSettings;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Which membership mechanism this node uses, with the settings of that mechanism only.
 *
 * @param type the mechanism ({@code WEIR_PEER_DISCOVERY_TYPE})
 * @param etcd etcd settings when {@code type} is {@link Type#ETCD}
 * @param kubernetes Kubernetes settings when {@code type} is {@link Type#K8S}
 * @param dns DNS settings when {@code type} is {@link Type#DNS}
 */
public record DiscoverySettings(
    Type type, Optional<EtcdSettings> etcd, Optional<KubernetesSettings> kubernetes, Optional<DnsSettings> dns) {

  /** Every variable discovery reads (each also accepted with the {@code GUBER_} prefix). */
  public static final List<String> VARIABLES =
      List.of(
          "WEIR_PEER_DISCOVERY_TYPE",
          "WEIR_DATA_CENTER",
          "WEIR_ETCD_ENDPOINTS",
          "WEIR_ETCD_KEY_PREFIX",
          "WEIR_ETCD_DIAL_TIMEOUT",
          "WEIR_ETCD_LEASE_TTL",
          "WEIR_ETCD_USER",
          "WEIR_ETCD_PASSWORD",
          "WEIR_ETCD_TLS_ENABLE",
          "WEIR_ETCD_TLS_CA",
          "WEIR_ETCD_TLS_CERT",
          "WEIR_ETCD_TLS_KEY",
          "WEIR_ETCD_TLS_SKIP_VERIFY",
          "WEIR_ETCD_DATA_CENTER",
          "WEIR_ETCD_ADVERTISE_ADDRESS",
          "WEIR_K8S_NAMESPACE",
          "WEIR_K8S_WATCH_MECHANISM",
          "WEIR_K8S_SERVICE_NAME",
          "WEIR_K8S_SELECTOR",
          "WEIR_K8S_POD_IP",
          "WEIR_K8S_POD_PORT",
          "WEIR_DNS_FQDN",
          "WEIR_DNS_POLL_INTERVAL");

  /** A membership mechanism. */
  public enum Type {
    /** A fixed list of peers ({@code WEIR_STATIC_PEERS}, the cluster module's StaticDiscovery). */
    STATIC,
    /** Registration and watch in etcd. */
    ETCD,
    /** EndpointSlices or pods from the Kubernetes API. */
    K8S,
    /** A/AAAA records of a name, typically a headless Service. */
    DNS;

    /**
     * Returns the mechanism's name as {@code WEIR_PEER_DISCOVERY_TYPE} spells it, also the {@code
     * mechanism} label of the discovery error counter.
     */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** Creates settings, requiring the selected mechanism's settings. */
  public DiscoverySettings {
    if (type == Type.ETCD && etcd.isEmpty()
        || type == Type.K8S && kubernetes.isEmpty()
        || type == Type.DNS && dns.isEmpty()) {
      throw new IllegalArgumentException("discovery type " + type + " needs its settings");
    }
  }

  /** Returns settings for {@link Type#STATIC}. */
  public static DiscoverySettings staticPeers() {
    return new DiscoverySettings(Type.STATIC, Optional.empty(), Optional.empty(), Optional.empty());
  }

  /**
   * Reads {@code WEIR_PEER_DISCOVERY_TYPE} (default {@code static}) and the selected mechanism's
   * variables; {@code advertiseAddress} is this node's gRPC address (for default ports).
   *
   * @throws dev.weir.core.config.ConfigException naming the variable, the value and what is allowed
   */
  public static DiscoverySettings fromEnv(Map<String, String> env, String advertiseAddress) {
    DiscoveryEnv reader = new DiscoveryEnv(env);
    String type = reader.oneOf("PEER_DISCOVERY_TYPE", "static", List.of("static", "etcd", "k8s", "dns"));
    return switch (Type.valueOf(type.toUpperCase(Locale.ROOT))) {
      case STATIC -> staticPeers();
      case ETCD -> new DiscoverySettings(
          Type.ETCD, Optional.of(EtcdSettings.fromEnv(reader)), Optional.empty(), Optional.empty());
      case K8S -> new DiscoverySettings(
          Type.K8S, Optional.empty(), Optional.of(KubernetesSettings.fromEnv(reader, advertiseAddress)), Optional.empty());
      case DNS -> new DiscoverySettings(
          Type.DNS, Optional.empty(), Optional.empty(), Optional.of(DnsSettings.fromEnv(reader)));
    };
  }

  /**
   * Returns the address this node is known by to its peers: {@code podIP:port} in Kubernetes when the
   * pod IP is given, {@code WEIR_ETCD_ADVERTISE_ADDRESS} with etcd when set, else {@code configured}.
   */
  public String advertiseAddress(String configured) {
    return switch (type) {
      case K8S -> kubernetes.orElseThrow().selfAddress(configured);
      case ETCD -> etcd.orElseThrow().advertiseAddress().orElse(configured);
      default -> configured;
    };
  }
}
