package dev.weir.core.cluster;

import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.health.ComponentHealth;
import dev.weir.core.health.HealthComponent;
import dev.weir.ring.HashRing;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The {@code discovery} health component: whether this node has joined the cluster, and whether
 * its discovery source answers.
 *
 * <p>Unhealthy, with the problems joined by {@code |}, until the node has {@linkplain #joined()
 * joined}: while no peer list has been applied yet ({@link #WAITING_FOR_DISCOVERY}), while the
 * applied lists lack this node ({@link #notInPeerList}), or while discovery has not reached its
 * source ({@link #WAITING_FOR_SOURCE}: etcd, the API server or DNS failing since start-up, so the
 * node would otherwise serve alone), or while a node that joined alone for that reason asks the
 * peers its source then listed for its counts and announces its return ({@link #RETURNING}), or
 * once it began to leave before it joined ({@link #LEAVING}, which comes first); after joining, when a ring lacks this node ({@link
 * #NOT_FOUND_IN_PEER_LIST}). After joining, a discovery problem is appended to the message but does
 * not make the component unhealthy: discovery keeps the last peers while it is degraded, as
 * Gubernator's health ignores discovery.
 */
public final class DiscoveryComponent implements HealthComponent, Membership.RingListener {

  /** The component's name. */
  public static final String NAME = "discovery";

  /** The message of a node whose discovery has not yet reported a peer list with it. */
  public static final String WAITING_FOR_DISCOVERY =
      "waiting for peer discovery: no peer list including this instance has been applied yet";

  /**
   * The message of a node whose peer list contains it but whose discovery has not yet reached its
   * source (so the list is discovery's stand-in: this node alone, or the last peers).
   */
  public static final String WAITING_FOR_SOURCE =
      "waiting for peer discovery: its source has not answered yet";

  /**
   * The message of a node that joined alone while discovery failed, while it asks the peers its
   * source listed since for the counts of its keys and tells them it is back.
   */
  public static final String RETURNING =
      "waiting for peer discovery: copying this instance's counts from the peers its source listed"
          + " after the join and announcing its return to them";

  /** The message of a node that began to leave the cluster before it joined. */
  public static final String LEAVING =
      "this instance is leaving the cluster (shutting down) before it joined";

  /** The message of a joined node that a later peer list left out, as Gubernator words it. */
  public static final String NOT_FOUND_IN_PEER_LIST = "this instance is not found in the peer list";

  /** How many peers {@link #notInPeerList} names before it only counts the rest. */
  static final int PEERS_NAMED = 3;

  private final String self;
  private final Supplier<? extends Collection<String>> members;
  private final PeerDiscovery discovery;
  private final BooleanSupplier returning;
  private volatile boolean peersApplied;
  private volatile boolean joined;
  private volatile boolean held;
  private volatile boolean leaving;

  /**
   * Creates the component of node {@code self}, one of {@code members} once discovery reports it;
   * {@code discovery} (may be null) reports a degraded source. Register it as a {@link
   * Membership.RingListener}.
   */
  public DiscoveryComponent(
      String self, Supplier<? extends Collection<String>> members, PeerDiscovery discovery) {
    this(self, members, discovery, () -> false);
  }

  /**
   * Creates the component as above that does not join while {@code returning} holds: the node is
   * leaving, or joined alone while discovery failed and has not yet returned to the peers listed
   * since. The component asks it at each check that would otherwise join the node, once per check.
   */
  public DiscoveryComponent(
      String self,
      Supplier<? extends Collection<String>> members,
      PeerDiscovery discovery,
      BooleanSupplier returning) {
    this.self = self;
    this.members = members;
    this.discovery = discovery;
    this.returning = returning;
  }

  /**
   * Notes that the ring became {@code after}: any change means discovery applied a peer list, so
   * the component stops reporting {@link #WAITING_FOR_DISCOVERY}, and a ring that contains this
   * node joins it once discovery reports no problem.
   */
  @Override
  public void ringChanged(HashRing before, HashRing after) {
    peersApplied = true;
    joinIfReady(after.contains(self));
  }

  /**
   * Notes that the node's return to the peers listed after a join alone ended: it joins now if
   * discovery reports no problem and the node is not leaving.
   */
  public void returnEnded() {
    joinIfReady(members.get().contains(self));
  }

  /** Notes that the node began to leave the cluster: if it has not joined, it never will. */
  public void leaving() {
    leaving = true;
  }

  /**
   * Returns whether this node has joined: a ring containing it was in place while discovery
   * reported no problem, so the peers came from discovery's source, not from its stand-in list.
   */
  public boolean joined() {
    return joined;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public ComponentHealth status() {
    Collection<String> current = members.get();
    boolean member = current.contains(self);
    joinIfReady(member);
    List<String> problems = new ArrayList<>();
    if (!joined) {
      if (leaving) {
        problems.add(LEAVING);
      } else if (!peersApplied) {
        problems.add(WAITING_FOR_DISCOVERY);
      } else if (!member) {
        problems.add(notInPeerList(self, List.copyOf(current)));
      } else if (held && current.size() > 1) {
        problems.add(RETURNING);
      } else {
        problems.add(WAITING_FOR_SOURCE);
      }
    } else if (!member) {
      problems.add(NOT_FOUND_IN_PEER_LIST);
    }
    boolean healthy = problems.isEmpty();
    String sourceProblem = sourceProblem();
    if (!sourceProblem.isEmpty()) {
      problems.add(sourceProblem);
    }
    String message = String.join("|", problems);
    return healthy ? ComponentHealth.ok(message) : ComponentHealth.unhealthy(message);
  }

  /**
   * Returns the message of node {@code self} before it joined, when discovery applied the peer list
   * {@code peers} without it: names this node and the first {@value #PEERS_NAMED} peers.
   */
  public static String notInPeerList(String self, List<String> peers) {
    StringBuilder named = new StringBuilder();
    for (int i = 0; i < Math.min(PEERS_NAMED, peers.size()); i++) {
      named.append(i == 0 ? "" : ", ").append(peers.get(i));
    }
    if (peers.size() > PEERS_NAMED) {
      named.append(", ... and ").append(peers.size() - PEERS_NAMED).append(" more");
    }
    return "this instance (" + self + ") is not in the peer list [" + named + "]; discovery must"
        + " report this node's advertise address (WEIR_ADVERTISE_ADDRESS)";
  }

  private void joinIfReady(boolean member) {
    if (joined || !member) {
      return;
    }
    held = returning.getAsBoolean();
    if (!held && sourceProblem().isEmpty()) {
      joined = true;
    }
  }

  private String sourceProblem() {
    return discovery == null ? "" : discovery.problem();
  }
}
