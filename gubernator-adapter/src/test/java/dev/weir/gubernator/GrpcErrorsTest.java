package dev.weir.gubernator;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.Status;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class GrpcErrorsTest {

  /** A failure no other test maps, so that no earlier line holds back this test's first. */
  private static final class EveryCallFails extends RuntimeException {
    EveryCallFails() {
      super("the service fails every call");
    }
  }

  @Test
  void unexpectedFailureOfEveryCall_internalEachTimeAndOneErrorLinePerInterval() {
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    Logger log = (Logger) LoggerFactory.getLogger(GrpcErrors.class);
    log.addAppender(appender);
    try {
      for (int i = 0; i < 5; i++) {
        Status status = GrpcErrors.toStatus(new EveryCallFails());

        assertThat(status.getCode()).isEqualTo(Status.Code.INTERNAL);
        assertThat(status.getDescription()).contains("the service fails every call");
      }

      assertThat(appender.list)
          .filteredOn(e -> e.getThrowableProxy() != null)
          .filteredOn(
              e -> e.getThrowableProxy().getClassName().equals(EveryCallFails.class.getName()))
          .hasSize(1)
          .allMatch(e -> e.getLevel() == Level.ERROR);
    } finally {
      log.detachAppender(appender);
    }
  }
}
