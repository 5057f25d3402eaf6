package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.turbo.TurboFilter;
import ch.qos.logback.core.read.ListAppender;
import ch.qos.logback.core.spi.FilterReply;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.testkit.FakeClock;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.Marker;

class WarmUpServerTest {

  private static final String LIVE_LINE = "live node line";

  private final LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
  private final Logger core = context.getLogger("dev.weir.core");
  private final Logger live = context.getLogger("dev.weir.core.cluster.ClusterNode");
  private final ListAppender<ILoggingEvent> logged = new ListAppender<>();
  private final LiveNodeLogsAlongside alongside = new LiveNodeLogsAlongside();
  private Level before;

  @BeforeEach
  void listen() {
    before = core.getLevel();
    core.setLevel(Level.INFO);
    logged.start();
    core.addAppender(logged);
    alongside.start();
    context.addTurboFilter(alongside);
  }

  @AfterEach
  void restore() {
    context.getTurboFilterList().remove(alongside);
    core.detachAppender(logged);
    core.setLevel(before);
  }

  @Test
  void startAndClose_liveNodeLogsAtTheSameMoments_keepsItsLinesAndHidesTheWarmUpsOwn()
      throws Exception {
    WarmUpServer.start(InputLimits.DEFAULTS, new FakeClock(), null).close();

    assertThat(alongside.calls.get()).as("the warm-up member's own logging calls").isPositive();
    assertThat(logged.list)
        .as("INFO lines under dev.weir.core during the warm-up's start and close")
        .hasSize(alongside.calls.get())
        .allSatisfy(e -> assertThat(e.getFormattedMessage()).isEqualTo(LIVE_LINE));
    assertThat(core.getLevel()).as("the level of dev.weir.core").isEqualTo(Level.INFO);
  }

  /**
   * At each logging call of a {@code dev.weir.core} logger other than {@link #live}, whatever its
   * level (a check of whether a level is on included), logs {@link #LIVE_LINE} at INFO on {@link #live}, as a node serving alongside would.
   */
  private final class LiveNodeLogsAlongside extends TurboFilter {
    private final ThreadLocal<Boolean> inside = ThreadLocal.withInitial(() -> false);
    private final AtomicInteger calls = new AtomicInteger();

    @Override
    public FilterReply decide(
        Marker marker, Logger logger, Level level, String format, Object[] params, Throwable t) {
      if (inside.get()
          || logger == live
          || !logger.getName().startsWith("dev.weir.core.")) {
        return FilterReply.NEUTRAL;
      }
      inside.set(true);
      try {
        calls.incrementAndGet();
        live.info(LIVE_LINE);
      } finally {
        inside.set(false);
      }
      return FilterReply.NEUTRAL;
    }
  }
}
