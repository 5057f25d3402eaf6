package dev.weir.core.cluster.peer.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PeerSecretTest {

  private static final String VALUE = "correct-horse-battery";

  @Test
  void matches_sameValue_trueOtherwiseFalse() {
    PeerSecret secret = PeerSecret.of(VALUE);

    assertThat(secret.matches(VALUE)).isTrue();
    assertThat(secret.matches(VALUE + "x")).isFalse();
    assertThat(secret.matches("correct-horse-batterz")).isFalse();
    assertThat(secret.matches("")).isFalse();
    assertThat(secret.matches(null)).isFalse();
  }

  @ParameterizedTest
  @CsvSource({
    "'short', must be 16 to 4096 characters long, got 5",
    "'with a space inside it', character 5 is not",
    "'tab\there-and-more-text', character 4 is not",
    "'caf\u00e9-caf\u00e9-caf\u00e9-caf\u00e9', character 4 is not",
  })
  void of_badValue_failsWithoutEchoingIt(String value, String problem) {
    assertThatThrownBy(() -> PeerSecret.of(value))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(problem)
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain(value));
  }

  @Test
  void of_tooLong_fails() {
    assertThatThrownBy(() -> PeerSecret.of("x".repeat(4097))).hasMessageContaining("got 4097");
  }

  @Test
  void toString_neverShowsTheValue() {
    assertThat(PeerSecret.of(VALUE).toString()).doesNotContain(VALUE).contains("redacted");
  }
}
