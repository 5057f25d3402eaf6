package dev.weir.http;

import io.netty.channel.Channel;
import java.util.Comparator;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A listener's connections that are waiting for a request (its head or its body, or the next one on
 * a kept-alive connection), oldest wait first: when the listener is at its connection cap, it
 * closes the oldest of them to make room for a new connection, so that clients which connect and
 * then say nothing, or trickle, cannot lock others out. A connection whose answer is being made is
 * never among them.
 */
final class WaitingConnections {

  /** One connection's wait for one request. */
  static final class Wait {
    private final long since;
    private final long order;
    private final Channel channel;

    private Wait(long since, long order, Channel channel) {
      this.since = since;
      this.order = order;
      this.channel = channel;
    }
  }

  private static final Comparator<Wait> OLDEST_FIRST =
      Comparator.<Wait>comparingLong(w -> w.since).thenComparingLong(w -> w.order);

  private final ConcurrentSkipListSet<Wait> waits = new ConcurrentSkipListSet<>(OLDEST_FIRST);
  private final AtomicLong order = new AtomicLong();

  /** Records that {@code channel} started waiting at {@code nanos}; returns the wait to end. */
  Wait start(Channel channel, long nanos) {
    Wait wait = new Wait(nanos, order.incrementAndGet(), channel);
    waits.add(wait);
    return wait;
  }

  /** Ends {@code wait} (null does nothing). */
  void end(Wait wait) {
    if (wait != null) {
      waits.remove(wait);
    }
  }

  /** Closes the connection that has waited longest; returns false when none is waiting. */
  boolean closeOldest() {
    Wait oldest = waits.pollFirst();
    if (oldest == null) {
      return false;
    }
    oldest.channel.close();
    return true;
  }

  /** Returns the number of connections waiting. */
  int size() {
    return waits.size();
  }
}
