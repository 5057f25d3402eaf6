package dev.weir.server;

import java.util.ArrayDeque;
import java.util.Deque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The components of a node started so far, each with what stops it: {@link #close()} stops them in
 * the reverse of the order they started, so that whatever a component needs is still running while
 * it stops. A composition root starts its components through {@link #start} and closes the
 * lifecycle both when a later component fails to start and when the node stops.
 */
final class Lifecycle implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(Lifecycle.class);

  /** Starts a component. */
  @FunctionalInterface
  interface Start<T> {
    T start() throws Exception;
  }

  /** Stops a started component. */
  @FunctionalInterface
  interface Stop<T> {
    void stop(T component) throws Exception;
  }

  /** Stops a component that needed no start. */
  @FunctionalInterface
  interface Action {
    void run() throws Exception;
  }

  private record Started(String name, Action stop) {}

  private final Deque<Started> started = new ArrayDeque<>();

  /**
   * Starts the component {@code name} with {@code start} and, once that returned, records {@code
   * stop} for it; returns the component. A start that throws records nothing.
   */
  synchronized <T> T start(String name, Start<T> start, Stop<? super T> stop) throws Exception {
    T component = start.start();
    started.push(new Started(name, () -> stop.stop(component)));
    return component;
  }

  /** Records {@code stop} for the component {@code name}, which needed no start. */
  synchronized void onStop(String name, Action stop) {
    started.push(new Started(name, stop));
  }

  /**
   * Stops every started component, the last started first, each once. A stop that fails is logged
   * naming its component and the next one still stops; a stop that is interrupted keeps the
   * interrupt status, which cuts the waits of the next ones short.
   */
  @Override
  public void close() {
    while (true) {
      Started next;
      synchronized (this) {
        next = started.poll();
      }
      if (next == null) {
        return;
      }
      try {
        next.stop().run();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (Exception e) {
        LOG.warn("stopping {} failed", next.name(), e);
      }
    }
  }
}
