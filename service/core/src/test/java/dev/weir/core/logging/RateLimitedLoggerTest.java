package dev.weir.core.logging;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.testkit.FakeClock;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class RateLimitedLoggerTest {

  private final FakeClock clock = new FakeClock();
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
  private RateLimitedLogger logger;

  @BeforeEach
  void setUp() {
    LoggerContext context = new LoggerContext();
    Logger log = context.getLogger("test");
    appender.setContext(context);
    appender.start();
    log.addAppender(appender);
    logger = new RateLimitedLogger(log, clock, Duration.ofSeconds(10));
  }

  private List<String> lines() {
    return appender.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
  }

  @Test
  void warn_repeatedWithinInterval_loggedOnce() {
    assertThat(logger.warn("peer-a", "peer {} failed", "a")).isTrue();
    clock.advance(Duration.ofSeconds(9));
    assertThat(logger.warn("peer-a", "peer {} failed", "a")).isFalse();

    assertThat(lines()).containsExactly("peer a failed");
  }

  @Test
  void warn_afterInterval_loggedWithSuppressedCount() {
    logger.warn("peer-a", "peer {} failed", "a");
    logger.warn("peer-a", "peer {} failed", "a");
    logger.warn("peer-a", "peer {} failed", "a");
    clock.advance(Duration.ofSeconds(10));
    logger.warn("peer-a", "peer {} failed", "a");

    assertThat(lines())
        .containsExactly("peer a failed", "peer a failed (suppressed 2 similar lines)");
  }

  @Test
  void warn_otherKey_notSuppressed() {
    logger.warn("peer-a", "peer {} failed", "a");
    logger.warn("peer-b", "peer {} failed", "b");

    assertThat(lines()).containsExactly("peer a failed", "peer b failed");
  }

  @Test
  void warn_trailingThrowable_keptAsThrowable() {
    logger.warn("k", "failed", new IllegalStateException("boom"));

    assertThat(appender.list.get(0).getThrowableProxy().getMessage()).isEqualTo("boom");
  }

  @Test
  void error_repeatedWithinInterval_loggedOnceAtError() {
    assertThat(logger.error("k", "call failed", new IllegalStateException("boom"))).isTrue();
    clock.advance(Duration.ofSeconds(9));
    assertThat(logger.error("k", "call failed", new IllegalStateException("boom"))).isFalse();

    assertThat(appender.list).hasSize(1);
    assertThat(appender.list.get(0).getLevel()).isEqualTo(ch.qos.logback.classic.Level.ERROR);
    assertThat(appender.list.get(0).getThrowableProxy().getMessage()).isEqualTo("boom");
  }

  @Test
  void warn_manyKeys_stateBounded() {
    for (int i = 0; i <= LogThrottle.MAX_KEYS; i++) {
      logger.warn("k" + i, "x");
    }

    assertThat(lines()).hasSize(LogThrottle.MAX_KEYS + 1);
  }
}
