package dev.weir.core.discovery;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Consumer;

/**
 * A discovery whose peer sets reach the listener through a {@link CoalescingListener}.
 *
 * <p>A set received while the wrapped discovery reports a problem, or after it reported one that no
 * later pass-on or check has yet found cleared (a set passed on, or a {@link #problem()} call with
 * no set held, while it reports none), keeps a problem ({@link #APPLYING} once the wrapped one
 * clears) until the coalescer has passed it on. Whether a source that answers again delivers its
 * peers before or after it clears its problem, the node therefore never finds itself alone with no
 * problem during the window, and does not join alone.
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
  private boolean problemSincePassedOn;

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
    CoalescingListener c =
        new CoalescingListener(
            peers -> {
              passingOn();
              listener.accept(peers);
            },
            scheduler,
            window,
            delegate::peerAddress);
    synchronized (this) {
      coalescer = c;
    }
    delegate.start(
        peers -> {
          boolean suspect;
          synchronized (this) {
            problemSincePassedOn |= !delegate.problem().isEmpty();
            suspect = problemSincePassedOn;
          }
          c.accept(peers);
          synchronized (this) {
            heldSinceProblem |= suspect && c.holding();
          }
        });
  }

  private void passingOn() {
    boolean clear = delegate.problem().isEmpty();
    synchronized (this) {
      if (clear) {
        problemSincePassedOn = false;
      }
    }
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
  public String dataCenter() {
    return delegate.dataCenter();
  }

  @Override
  public synchronized boolean holdingPeers() {
    return coalescer != null && coalescer.holding();
  }

  @Override
  public String problem() {
    String problem = delegate.problem();
    synchronized (this) {
      if (!problem.isEmpty()) {
        problemSincePassedOn = true;
        return problem;
      }
      boolean holding = coalescer != null && coalescer.holding();
      if (heldSinceProblem && holding) {
        return APPLYING;
      }
      heldSinceProblem = false;
      if (!holding) {
        problemSincePassedOn = false;
      }
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
