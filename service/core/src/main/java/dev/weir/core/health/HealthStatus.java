package dev.weir.core.health;

import java.util.List;

/**
 * A node's health as {@code HealthCheck} reports it.
 *
 * @param healthy whether the node and its peers answer
 * @param message why the node is unhealthy, followed by any discovery problem (which alone does not
 *     make it unhealthy); empty when all is well
 * @param peerCount the number of peers, this node included
 * @param advertiseAddress this node's advertised gRPC address
 * @param peers the advertised gRPC addresses of all peers
 * @param dataCenter the data center of every peer as discovery reports it, empty when it reports
 *     none
 */
public record HealthStatus(
    boolean healthy,
    String message,
    int peerCount,
    String advertiseAddress,
    List<String> peers,
    String dataCenter) {

  /** Creates a status, copying {@code peers}. */
  public HealthStatus {
    peers = List.copyOf(peers);
  }

  /** Creates a status whose peers have no data center. */
  public HealthStatus(
      boolean healthy, String message, int peerCount, String advertiseAddress, List<String> peers) {
    this(healthy, message, peerCount, advertiseAddress, peers, "");
  }
}
