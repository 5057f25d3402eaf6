package dev.weir.core.discovery;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Consumer;

/**
 * A discovery whose peer sets reach the listener through a {@link CoalescingListener}.
 *
 * <p>A set received while the wrapped discovery reports a problem keeps a problem ({@link #APPLYING}
 * once the wrapped one clears) until the coalescer has passed it on: a source that answers again
 * delivers its peers before it clears its problem, and without this the node would find itself
 * alone with no problem during the window and join alone.
 */
public final class CoalescedDiscovery implements PeerDiscovery {
  /** The problem while a set received during a discovery problem waits for the end of the window. */
  public static final String APPLYING =
      "peer discovery's source answered; its peer set is applied at the end of the coalescing window";

  private final PeerDiscovery delegate;
  private final ScheduledExecutorService scheduler;
  private final Duration window;
  private CoalescingListener coalescer;
  private boolean heldSinceProblem;

  /** Wraps {@code delegate}, coalescing its updates over {@code window} on {@code scheduler}. */
  public CoalescedDiscovery(PeerDiscovery delegate, ScheduledExecutorService scheduler, Duration window) {
    this.delegate = delegate;
    this.scheduler = scheduler;
    this.window = window;
  }

  /** Returns the wrapped mechanism. */
  public PeerDiscovery delegate() {
    return delegate;
  }

  @Override
  public void start(Consumer<Set<String>> listener) throws Exception {
    CoalescingListener c = new CoalescingListener(listener, scheduler, window, delegate::peerAddress);
    synchronized (this) {
      coalescer = c;
    }
    delegate.start(
        peers -> {
          boolean degraded = !delegate.problem().isEmpty();
          c.accept(peers);
          synchronized (this) {
            heldSinceProblem |= degraded && c.holding();
          }
        });
  }

  @Override
  public Optional<String> peerAddress(String member) {
    return delegate.peerAddress(member);
  }

  @Override
  public boolean onlySelf() {
    return delegate.onlySelf();
  }

  @Override
  public String problem() {
    String problem = delegate.problem();
    if (!problem.isEmpty()) {
      return problem;
    }
    synchronized (this) {
      if (heldSinceProblem && coalescer != null && coalescer.holding()) {
        return APPLYING;
      }
      heldSinceProblem = false;
    }
    return "";
  }

  @Override
  public void close() throws Exception {
    CoalescingListener c;
    synchronized (this) {
      c = coalescer;
    }
    if (c != null) {
      c.close();
    }
    delegate.close();
  }
}
