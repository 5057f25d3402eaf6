package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.testkit.FakeClock;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class JulBridgeTest {

  private final FakeClock clock = new FakeClock();
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
  private final String name = "io.grpc.test." + UUID.randomUUID();
  private final Logger jul = Logger.getLogger(name);
  private ch.qos.logback.classic.Logger logback;

  @BeforeEach
  void bridge() {
    LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
    logback = context.getLogger(name);
    appender.setContext(context);
    appender.start();
    logback.addAppender(appender);
    logback.setLevel(Level.INFO);
    jul.setUseParentHandlers(false);
    jul.setLevel(java.util.logging.Level.INFO);
    jul.addHandler(new JulBridge(clock));
  }

  @AfterEach
  void unbridge() {
    logback.detachAppender(appender);
  }

  private List<String> lines() {
    return appender.list.stream().map(e -> e.getLevel() + " " + e.getFormattedMessage()).toList();
  }

  @Test
  void severeFlood_oneErrorPerIntervalWithItsStackAndTheCountHeldBack() {
    for (int i = 0; i < 1000; i++) {
      jul.log(
          java.util.logging.Level.SEVERE,
          "Exception while executing runnable call-" + i,
          new IllegalStateException("boom " + i));
    }
    clock.advance(Duration.ofSeconds(10));
    jul.log(java.util.logging.Level.SEVERE, "Exception while executing runnable call-x",
        new IllegalStateException("boom x"));

    assertThat(lines())
        .containsExactly(
            "ERROR Exception while executing runnable call-0",
            "ERROR Exception while executing runnable call-x (suppressed 999 similar messages)");
    assertThat(appender.list.get(0).getThrowableProxy().getMessage()).isEqualTo("boom 0");
  }

  @Test
  void warnings_otherLevelOrExceptionType_notHeldBackByEachOther() {
    jul.log(java.util.logging.Level.WARNING, "a", new IllegalStateException());
    jul.log(java.util.logging.Level.WARNING, "b", new IOException());
    jul.log(java.util.logging.Level.SEVERE, "c", new IOException());
    jul.log(java.util.logging.Level.WARNING, "d");

    assertThat(lines()).containsExactly("WARN a", "WARN b", "ERROR c", "WARN d");
  }

  @Test
  void info_passedOnUnthrottled() {
    for (int i = 0; i < 3; i++) {
      jul.info("connection " + i + " closed");
    }

    assertThat(lines())
        .containsExactly("INFO connection 0 closed", "INFO connection 1 closed", "INFO connection 2 closed");
  }

  @Test
  void logbackXml_grpcLevelPropagatedToJul_infoNeverCreated() throws Exception {
    LoggerContext context = new LoggerContext();
    JoranConfigurator configurator = new JoranConfigurator();
    configurator.setContext(context);
    configurator.doConfigure(JulBridgeTest.class.getResource("/logback.xml"));

    Logger transport =
        Logger.getLogger("io.grpc.netty.shaded.io.grpc.netty.NettyServerTransport.connections");

    assertThat(transport.isLoggable(java.util.logging.Level.INFO)).isFalse();
    assertThat(transport.isLoggable(java.util.logging.Level.WARNING)).isTrue();
    context.stop();
  }
}
