package dev.weir.core.cluster.peer;

import dev.weir.core.health.ComponentHealth;
import dev.weir.core.health.HealthComponent;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The {@code peers} health component: the members that are down or whose last call failed, each
 * with its error. Reported by Gubernator's {@code HealthCheck} (which turns unhealthy, as
 * Gubernator's does on peer errors), but it never fails readiness: one peer's trouble must not take
 * the nodes that answer out of service. An error stops counting once the peer answers again.
 */
public final class PeersComponent implements HealthComponent {

  /** The component's name. */
  public static final String NAME = "peers";

  private final PeerLiveness liveness;
  private final Supplier<? extends Collection<String>> members;
  private final Function<String, String> voucher;

  /** Creates the component reporting {@code liveness} for the peers among {@code members}. */
  public PeersComponent(PeerLiveness liveness, Supplier<? extends Collection<String>> members) {
    this(liveness, members, peer -> null);
  }

  /**
   * Creates the component as above, naming for a peer that is down the peer that reaches it for
   * this node ({@code voucher}: null when none does).
   */
  public PeersComponent(
      PeerLiveness liveness,
      Supplier<? extends Collection<String>> members,
      Function<String, String> voucher) {
    this.liveness = liveness;
    this.members = members;
    this.voucher = voucher;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public boolean gatesReadiness() {
    return false;
  }

  @Override
  public ComponentHealth status() {
    Collection<String> current = members.get();
    List<String> problems = new ArrayList<>();
    for (PeerLiveness.PeerState state : liveness.troubled()) {
      if (current.contains(state.peer())) {
        problems.add(describe(state));
      }
    }
    return problems.isEmpty()
        ? ComponentHealth.ok()
        : ComponentHealth.unhealthy(String.join("|", problems));
  }

  private String describe(PeerLiveness.PeerState state) {
    if (state.up()) {
      return state.error();
    }
    String down =
        String.format(
            Locale.ROOT,
            "peer '%s' is down (for %.1fs): %s",
            state.peer(),
            state.downFor().toMillis() / 1000.0,
            state.error());
    String through = voucher.apply(state.peer());
    return through == null
        ? down
        : down + "; '" + through + "' reaches it and relays its items (it stays on the ring)";
  }
}
