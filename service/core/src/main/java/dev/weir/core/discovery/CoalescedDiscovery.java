package dev.weir.core.discovery;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Consumer;

/** A discovery whose peer sets reach the listener through a {@link CoalescingListener}. */
public final class CoalescedDiscovery implements PeerDiscovery {
  private final PeerDiscovery delegate;
  private final ScheduledExecutorService scheduler;
  private final Duration window;
  private CoalescingListener coalescer;

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
    synchronized (this) {
      coalescer = new CoalescingListener(listener, scheduler, window, delegate::peerAddress);
    }
    delegate.start(coalescer);
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
    return delegate.problem();
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
