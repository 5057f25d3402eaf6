package dev.weir.core.time;

/** The clock of the running JVM: {@link System#currentTimeMillis()} and {@link System#nanoTime()}. */
public final class SystemClock implements Clock {

  /** The shared instance. */
  public static final SystemClock INSTANCE = new SystemClock();

  private SystemClock() {}

  @Override
  public long wallMillis() {
    return System.currentTimeMillis();
  }

  @Override
  public long monotonicNanos() {
    return System.nanoTime();
  }
}
