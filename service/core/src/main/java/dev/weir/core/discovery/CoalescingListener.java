package dev.weir.core.discovery;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A peer-set listener that passes the first set on at once and then at most one set per window: every
 * set received within a window after a change replaces the pending one, and when the window ends the
 * latest set is delivered unless it equals the last one delivered, with the same {@linkplain
 * PeerDiscovery#peerAddress peer addresses} for its members. A peer that flaps out and back within a
 * window therefore causes no ring rebuild at all, while a member whose peer listener moved is
 * delivered again.
 *
 * <p>The window is fixed from the first change (not restarted by each event), so continuous churn
 * still reaches the ring once per window.
 */
public final class CoalescingListener implements Consumer<Set<String>>, AutoCloseable {
  /** The default coalescing window. */
  public static final Duration DEFAULT_WINDOW = Duration.ofMillis(250);

  private final Consumer<Set<String>> downstream;
  private final ScheduledExecutorService scheduler;
  private final Duration window;
  private final Function<String, Optional<String>> peerAddresses;

  private Set<String> delivered;
  private Map<String, Optional<String>> deliveredAddresses;
  private Set<String> pending;
  private ScheduledFuture<?> flush;
  private boolean delivering;
  private boolean closed;

  /** Creates a listener that feeds {@code downstream}, timing windows on {@code scheduler}. */
  public CoalescingListener(
      Consumer<Set<String>> downstream, ScheduledExecutorService scheduler, Duration window) {
    this(downstream, scheduler, window, member -> Optional.empty());
  }

  /**
   * Creates a listener as above that also delivers a set equal to the last one when {@code
   * peerAddresses} (the discovery's {@link PeerDiscovery#peerAddress}) reports another address for
   * one of its members than at that delivery.
   */
  public CoalescingListener(
      Consumer<Set<String>> downstream,
      ScheduledExecutorService scheduler,
      Duration window,
      Function<String, Optional<String>> peerAddresses) {
    this.downstream = downstream;
    this.scheduler = scheduler;
    this.window = window;
    this.peerAddresses = peerAddresses;
  }

  @Override
  public void accept(Set<String> peers) {
    Set<String> copy = Set.copyOf(peers);
    Set<String> now = null;
    synchronized (this) {
      if (closed) {
        return;
      }
      if (delivered == null) {
        delivered = copy;
        deliveredAddresses = addressesOf(copy);
        now = copy;
      } else {
        pending = copy;
        if (flush == null) {
          flush = scheduler.schedule(this::flush, window.toNanos(), TimeUnit.NANOSECONDS);
        }
      }
    }
    if (now != null) {
      downstream.accept(now);
    }
  }

  private void flush() {
    Set<String> next;
    synchronized (this) {
      flush = null;
      next = pending;
      pending = null;
      if (closed || next == null) {
        return;
      }
      Map<String, Optional<String>> addresses = addressesOf(next);
      if (next.equals(delivered) && addresses.equals(deliveredAddresses)) {
        return;
      }
      delivered = next;
      deliveredAddresses = addresses;
      delivering = true;
    }
    try {
      downstream.accept(next);
    } finally {
      synchronized (this) {
        delivering = false;
      }
    }
  }

  /**
   * Returns whether a received set has not yet been passed on: it waits for the end of the window,
   * or is being delivered.
   */
  public synchronized boolean holding() {
    return pending != null || delivering;
  }

  private Map<String, Optional<String>> addressesOf(Set<String> members) {
    Map<String, Optional<String>> addresses = new HashMap<>();
    for (String member : members) {
      addresses.put(member, peerAddresses.apply(member));
    }
    return addresses;
  }

  /** Drops any pending set and stops delivering. */
  @Override
  public synchronized void close() {
    closed = true;
    pending = null;
    if (flush != null) {
      flush.cancel(false);
      flush = null;
    }
  }
}
