package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.FakeClock;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code weir.jar ratelimit}'s start-up failures and help, named by the reference's variables. */
class RatelimitCommandTest {

  private final FakeClock clock = new FakeClock();

  @Test
  void startNode_componentFailsWithAnUnexpectedRuntimeException_lineNamesLogLevelNotWeirLogLevel() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int[] status = {0};

    WeirNode started =
        RatelimitCommand.startNode(
            ServeCommandTest.extraRoutesFail(TestConfigs.loopback(), clock),
            new PrintStream(err, true, StandardCharsets.UTF_8),
            status,
            List.of());

    assertThat(started).isNull();
    assertThat(status[0]).isEqualTo(ServeCommand.EXIT_START_FAILED);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            "cannot start: the extra routes cannot be made (LOG_LEVEL=debug logs the stack trace)"
                + System.lineSeparator());
  }

  @Test
  void help_namesTheReferenceLogLevelForTheStackTrace() {
    assertThat(new RatelimitCommand().help())
        .contains("LOG_LEVEL=debug adds the stack trace")
        .doesNotContain("WEIR_LOG_LEVEL");
  }
}
