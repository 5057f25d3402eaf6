package dev.weir.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.io.IOException;
import org.junit.jupiter.api.Test;

class WeirExceptionTest {

  @Test
  void of_causeMessageEqualToTheDescription_namesItOnce() {
    Throwable failure =
        Status.UNAVAILABLE
            .withDescription("io exception")
            .withCause(new IOException("io exception"))
            .asRuntimeException();

    assertThat(WeirException.of(failure, "node:1051").getMessage())
        .isEqualTo("call to node:1051 failed with UNAVAILABLE: io exception");
  }

  @Test
  void of_multiLineCauseMessage_takesItsFirstLine() {
    Throwable failure =
        Status.UNAVAILABLE
            .withDescription("io exception")
            .withCause(
                new IOException("Connection refused: /127.0.0.1:1\n\tat somewhere\nmore"))
            .asRuntimeException();

    assertThat(WeirException.of(failure, "node:1051").getMessage())
        .isEqualTo(
            "call to node:1051 failed with UNAVAILABLE: io exception"
                + " (Connection refused: /127.0.0.1:1)");
  }

  @Test
  void of_causeMessageOtherThanTheDescription_namesBoth() {
    Throwable failure =
        Status.UNAVAILABLE
            .withDescription("io exception")
            .withCause(new IOException("Connection refused: /127.0.0.1:1"))
            .asRuntimeException();

    assertThat(WeirException.of(failure, "node:1051").getMessage())
        .isEqualTo(
            "call to node:1051 failed with UNAVAILABLE: io exception"
                + " (Connection refused: /127.0.0.1:1)");
  }
}
