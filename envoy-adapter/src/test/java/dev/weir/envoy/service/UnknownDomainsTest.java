package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.testkit.FakeClock;
import dev.weir.envoy.config.DescriptorLevel;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.metrics.EnvoyMetrics;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class UnknownDomainsTest {

  private final FakeClock clock = new FakeClock();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
  private UnknownDomains unknown;

  @BeforeEach
  void setUp() {
    LoggerContext context = new LoggerContext();
    Logger log = context.getLogger("test");
    appender.setContext(context);
    appender.start();
    log.addAppender(appender);
    unknown =
        new UnknownDomains(
            new EnvoyMetrics(registry),
            new RateLimitedLogger(log, clock, UnknownDomains.LOG_INTERVAL));
  }

  private List<String> lines() {
    return appender.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
  }

  private double count() {
    return registry.get("weir.envoy.domain_not_found").counter().count();
  }

  @Test
  void recordIfMissing_unknownDomain_countsEveryRequestAndLogsOncePerInterval() {
    unknown.recordIfMissing("shopp", Optional.empty());
    unknown.recordIfMissing("shopp", Optional.empty());
    clock.advance(UnknownDomains.LOG_INTERVAL);
    unknown.recordIfMissing("shopp", Optional.empty());

    assertThat(count()).isEqualTo(3);
    assertThat(lines())
        .containsExactly(
            "ShouldRateLimit for domain 'shopp', which no loaded rate limit config declares:"
                + " answered OK without a limit (counted in weir.envoy.domain_not_found)",
            "ShouldRateLimit for domain 'shopp', which no loaded rate limit config declares:"
                + " answered OK without a limit (counted in weir.envoy.domain_not_found)"
                + " (suppressed 1 similar lines)");
  }

  @Test
  void recordIfMissing_knownDomain_neitherCountedNorLogged() {
    unknown.recordIfMissing("shop", Optional.of(new DomainConfig("shop", DescriptorLevel.EMPTY)));

    assertThat(count()).isZero();
    assertThat(lines()).isEmpty();
  }

  @Test
  void recordIfMissing_manyDistinctDomains_oneMeterWithoutTagsAndBoundedLines() {
    for (int i = 0; i < 10 * UnknownDomains.MAX_NAMED_DOMAINS; i++) {
      unknown.recordIfMissing("d" + i, Optional.empty());
    }

    List<Counter> meters =
        registry.find("weir.envoy.domain_not_found").counters().stream().toList();
    assertThat(meters).singleElement().satisfies(c -> assertThat(c.getId().getTags()).isEmpty());
    assertThat(count()).isEqualTo(10 * UnknownDomains.MAX_NAMED_DOMAINS);
    assertThat(lines()).hasSize(UnknownDomains.MAX_NAMED_DOMAINS + 1);
    assertThat(lines().get(UnknownDomains.MAX_NAMED_DOMAINS))
        .startsWith(
            "ShouldRateLimit for more than 64 domains no loaded rate limit config declares,"
                + " such as 'd64'");
  }

  @Test
  void shown_longOrControlCharacters_cutAndEscaped() {
    assertThat(UnknownDomains.shown("a\nb")).isEqualTo("a\\u000ab");
    assertThat(UnknownDomains.shown("x".repeat(1000)))
        .isEqualTo("x".repeat(UnknownDomains.MAX_SHOWN_CHARS) + "...(1000 chars)");
  }
}
