package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class LifecycleTest {

  private final List<String> events = new ArrayList<>();
  private final Lifecycle lifecycle = new Lifecycle();

  private String start(String name) throws Exception {
    return lifecycle.start(
        name,
        () -> {
          events.add("start " + name);
          return name;
        },
        component -> events.add("stop " + component));
  }

  @Test
  void close_startedComponents_stoppedInReverseOrderOnce() throws Exception {
    start("a");
    lifecycle.onStop("b", () -> events.add("stop b"));
    start("c");

    lifecycle.close();
    lifecycle.close();

    assertThat(events).containsExactly("start a", "start c", "stop c", "stop b", "stop a");
  }

  @Test
  void start_fails_recordsNothingForItAndTheOthersStillStop() throws Exception {
    start("a");
    assertThatThrownBy(
            () ->
                lifecycle.start(
                    "b",
                    () -> {
                      throw new IllegalStateException("b cannot start");
                    },
                    component -> events.add("stop b")))
        .hasMessage("b cannot start");

    lifecycle.close();

    assertThat(events).containsExactly("start a", "stop a");
  }

  @Test
  void close_stopFails_loggedNamingItAndTheNextStillStops() throws Exception {
    Logger logger = (Logger) LoggerFactory.getLogger(Lifecycle.class);
    ListAppender<ILoggingEvent> logged = new ListAppender<>();
    logged.start();
    logger.addAppender(logged);
    start("a");
    lifecycle.onStop(
        "b",
        () -> {
          throw new IllegalStateException("boom");
        });
    try {
      lifecycle.close();
    } finally {
      logger.detachAppender(logged);
    }

    assertThat(events).containsExactly("start a", "stop a");
    assertThat(logged.list).hasSize(1);
    assertThat(logged.list.get(0).getLevel()).isEqualTo(Level.WARN);
    assertThat(logged.list.get(0).getFormattedMessage()).isEqualTo("stopping b failed");
  }

  @Test
  void close_stopInterrupted_nextStopsRunWithTheInterruptStatusKept() throws Exception {
    List<Boolean> interruptedDuringA = new ArrayList<>();
    lifecycle.onStop("a", () -> interruptedDuringA.add(Thread.currentThread().isInterrupted()));
    lifecycle.onStop(
        "wait",
        () -> {
          throw new InterruptedException();
        });

    lifecycle.close();

    assertThat(interruptedDuringA).containsExactly(true);
    assertThat(Thread.interrupted()).isTrue();
  }
}
