package dev.weir.core.limiter;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A count of bytes held against a fixed most, shared by threads: a take that would pass the most
 * takes nothing.
 */
public final class ByteBudget {

  private final long most;
  private final AtomicLong held = new AtomicLong();

  /** Creates a budget of at most {@code most} bytes held. */
  public ByteBudget(long most) {
    this.most = most;
  }

  /** Takes {@code bytes} and returns true, or returns false, taking nothing, when they do not fit. */
  public boolean take(long bytes) {
    while (true) {
      long now = held.get();
      if (now + bytes > most) {
        return false;
      }
      if (held.compareAndSet(now, now + bytes)) {
        return true;
      }
    }
  }

  /** Gives back {@code bytes} taken before. */
  public void give(long bytes) {
    held.addAndGet(-bytes);
  }

  /** Returns the bytes held now. */
  public long held() {
    return held.get();
  }

  /** Returns the most bytes that may be held. */
  public long most() {
    return most;
  }
}
