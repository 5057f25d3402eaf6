package dev.weir.core.discovery.dns;

import dev.weir.core.config.HostPort;
import dev.weir.core.discovery.DiscoveryEnv;
import java.time.Duration;
import java.util.List;

/**
 * The settings of DNS discovery.
 *
 * @param fqdns names whose A/AAAA records are the peers (typically one headless Service)
 * @param pollInterval time between lookups
 */
public record DnsSettings(List<String> fqdns, Duration pollInterval) {

  /** The default time between lookups: Gubernator's retry interval and short enough for scale-ups. */
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(5);

  /** Creates settings, requiring at least one name. */
  public DnsSettings {
    fqdns = List.copyOf(fqdns);
    if (fqdns.isEmpty()) {
      throw new IllegalArgumentException("DNS discovery needs at least one name");
    }
  }

  /** Reads {@code WEIR_DNS_FQDN} (comma-separated) and {@code WEIR_DNS_POLL_INTERVAL}. */
  public static DnsSettings fromEnv(DiscoveryEnv env) {
    List<String> fqdns = env.list("DNS_FQDN", List.of());
    if (fqdns.isEmpty()) {
      throw env.invalid("DNS_FQDN", env.string("DNS_FQDN", ""),
          "a host name such as weir-peers.weir.svc.cluster.local when WEIR_PEER_DISCOVERY_TYPE=dns");
    }
    for (String fqdn : fqdns) {
      for (int i = 0; i < fqdn.length(); i++) {
        char c = fqdn.charAt(i);
        if (!HostPort.isHostNameChar(c)) {
          throw env.invalid(
              "DNS_FQDN",
              env.string("DNS_FQDN", ""),
              "comma-separated host names such as weir-peers.weir.svc.cluster.local, without port"
                  + " or scheme (entry '"
                  + fqdn
                  + "' holds "
                  + (Character.isWhitespace(c) ? "a space" : "'" + c + "'")
                  + (HostPort.runsTogether(fqdn) ? "; separate entries with commas" : "")
                  + ")");
        }
      }
    }
    return new DnsSettings(fqdns, env.duration("DNS_POLL_INTERVAL", DEFAULT_POLL_INTERVAL, Duration.ofMillis(100)));
  }
}
