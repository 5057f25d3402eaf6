package dev.weir.core.limiter;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.model.RateLimitRequest;
import java.util.Map;
import org.junit.jupiter.api.Test;

class InputLimitsTest {

  @Test
  void from_unset_defaults() {
    assertThat(InputLimits.from(new EnvReader(Map.of()))).isEqualTo(InputLimits.DEFAULTS);
    assertThat(InputLimits.DEFAULTS.maxGrpcMessageBytes()).isEqualTo(4 * 1024 * 1024);
  }

  @Test
  void from_set_readsEach() {
    InputLimits limits =
        InputLimits.from(
            new EnvReader(
                Map.of(
                    "WEIR_GRPC_MAX_MESSAGE_SIZE", "1048576",
                    "WEIR_HTTP_MAX_BODY_SIZE", "2048",
                    "WEIR_MAX_NAME_LENGTH", "10",
                    "WEIR_MAX_KEY_LENGTH", "20",
                    "WEIR_MAX_DESCRIPTOR_ENTRIES", "3",
                    "WEIR_MAX_DESCRIPTOR_VALUE_LENGTH", "30")));

    assertThat(limits).isEqualTo(new InputLimits(1_048_576, 2048, 10, 20, 3, 30));
  }

  @Test
  void from_messageSizeBelowMinimum_errorNamesVariableValueAndRange() {
    assertThatThrownBy(
            () -> InputLimits.from(new EnvReader(Map.of("WEIR_GRPC_MAX_MESSAGE_SIZE", "100"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_GRPC_MAX_MESSAGE_SIZE")
        .hasMessageContaining("100")
        .hasMessageContaining("65536 to 67108864");
  }

  @Test
  void from_nameOrKeyLengthOverTheLongest_errorNamesVariableValueRangeAndWhy() {
    assertThatThrownBy(
            () -> InputLimits.from(new EnvReader(Map.of("WEIR_MAX_KEY_LENGTH", "65536"))))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_MAX_KEY_LENGTH='65536' is not valid: expected a whole number from 1 to 8192 (so"
                + " that 1000 items with the longest name and key fit in one call between nodes,"
                + " at most 64 MiB)");
    assertThatThrownBy(
            () -> InputLimits.from(new EnvReader(Map.of("WEIR_MAX_NAME_LENGTH", "8193"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith(
            "WEIR_MAX_NAME_LENGTH='8193' is not valid: expected a whole number from 1 to 8192");
    assertThat(
            InputLimits.from(
                new EnvReader(
                    Map.of("WEIR_MAX_NAME_LENGTH", "8192", "WEIR_MAX_KEY_LENGTH", "8192"))))
        .isEqualTo(new InputLimits(4 << 20, 4 << 20, 8192, 8192, 64, 256));
  }

  @Test
  void checkItem_keyOverLimit_errorNamesFieldLengthAndMax() {
    InputLimits limits = new InputLimits(65_536, 1024, 8, 4, 1, 1);

    assertThat(limits.checkItem(RateLimitRequest.builder("name", "abcde").build()))
        .contains("field 'unique_key' is 5 bytes long; at most 4 are allowed (WEIR_MAX_KEY_LENGTH)");
    assertThat(limits.checkItem(RateLimitRequest.builder("n".repeat(9), "k").build()))
        .contains("field 'name' is 9 bytes long; at most 8 are allowed (WEIR_MAX_NAME_LENGTH)");
    assertThat(limits.checkItem(RateLimitRequest.builder("n".repeat(8), "abcd").build())).isEmpty();
  }

  @Test
  void checkItem_multiByteCharacters_countedInUtf8Bytes() {
    InputLimits limits = new InputLimits(65_536, 1024, 100, 4, 1, 1);

    assertThat(limits.checkItem(RateLimitRequest.builder("n", "\u00e9\u00e9").build())).isEmpty();
    assertThat(limits.checkItem(RateLimitRequest.builder("n", "\u00e9\u00e9\u00e9").build()))
        .contains("field 'unique_key' is 6 bytes long; at most 4 are allowed (WEIR_MAX_KEY_LENGTH)");
  }
}
