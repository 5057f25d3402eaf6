package dev.weir.server;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The listeners of a node, stopped side by side: each stops taking new calls at once and waits up
 * to the grace (or its own cap, when lower) for its calls in flight, after which the rest are
 * cancelled; {@link #stop} returns when all have stopped. An interrupt cuts every wait short.
 */
final class Listeners {

  private static final Logger LOG = LoggerFactory.getLogger(Listeners.class);

  private record Listener(String name, Consumer<Duration> stop, Duration cap) {}

  private final List<Listener> listeners = new ArrayList<>();

  /** Adds the listener {@code name}, stopped by {@code stop} with the grace it is given. */
  synchronized void add(String name, Consumer<Duration> stop) {
    listeners.add(new Listener(name, stop, null));
  }

  /**
   * Starts the listener {@code name} with {@code start} and adds it, to be stopped by {@code stop};
   * returns it.
   */
  <T> T open(String name, Lifecycle.Start<T> start, BiConsumer<? super T, Duration> stop)
      throws Exception {
    return open(name, start, stop, null);
  }

  /** Starts and adds the listener {@code name} as above, given at most {@code cap} to stop. */
  <T> T open(
      String name, Lifecycle.Start<T> start, BiConsumer<? super T, Duration> stop, Duration cap)
      throws Exception {
    T listener = start.start();
    synchronized (this) {
      listeners.add(new Listener(name, grace -> stop.accept(listener, grace), cap));
    }
    return listener;
  }

  /** Stops every listener side by side, each waiting up to {@code grace} for its calls. */
  void stop(Duration grace) {
    List<Thread> stoppers = new ArrayList<>();
    synchronized (this) {
      for (Listener listener : listeners) {
        Duration own =
            listener.cap() != null && listener.cap().compareTo(grace) < 0 ? listener.cap() : grace;
        stoppers.add(stopper("weir-stop-" + listener.name(), () -> listener.stop().accept(own)));
      }
      listeners.clear();
    }
    stoppers.forEach(Listeners::joinPromptly);
  }

  /**
   * Starts a daemon thread named {@code name} that runs {@code stop}, logging a failure as a
   * warning naming {@code name}.
   */
  static Thread stopper(String name, Runnable stop) {
    Runnable logged =
        () -> {
          try {
            stop.run();
          } catch (RuntimeException e) {
            LOG.warn("stopping {} failed", name, e);
          }
        };
    Thread thread = new Thread(logged, name);
    thread.setDaemon(true);
    thread.start();
    return thread;
  }

  /**
   * Waits for {@code thread} to end; while the current thread is interrupted, it interrupts {@code
   * thread} so that its wait is cut short too, and keeps the interrupt status.
   */
  private static void joinPromptly(Thread thread) {
    boolean interrupted = Thread.interrupted();
    if (interrupted) {
      thread.interrupt();
    }
    while (true) {
      try {
        thread.join();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
        thread.interrupt();
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
