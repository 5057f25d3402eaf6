package dev.weir.core.cluster.peer;

import dev.weir.core.health.ComponentHealth;
import dev.weir.core.health.HealthComponent;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
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

  /** Creates the component reporting {@code liveness} for the peers among {@code members}. */
  public PeersComponent(PeerLiveness liveness, Supplier<? extends Collection<String>> members) {
    this.liveness = liveness;
    this.members = members;
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
  public ComponentHealth check() {
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

  private static String describe(PeerLiveness.PeerState state) {
    if (state.up()) {
      return state.error();
    }
    return String.format(
        Locale.ROOT,
        "peer '%s' is down (for %.1fs): %s",
        state.peer(),
        state.downFor().toMillis() / 1000.0,
        state.error());
  }
}
