package dev.weir.core.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.config.UnknownVariables.Unknown;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class UnknownVariablesTest {

  private final UnknownVariables check =
      new UnknownVariables(
          List.of(
              WeirConfig.CACHE_SIZE,
              WeirConfig.GRPC_ADDRESS,
              EnvVar.of("WEIR_STATIC_PEERS"),
              EnvVar.of("WEIR_HTTP_MAX_IN_FLIGHT", "WEIR_HTTP_MAX_QUEUE")));

  @Test
  void find_knownNamesAliasesAndOtherVariables_notReported() {
    assertThat(
            check.find(
                List.of(
                    "WEIR_CACHE_SIZE",
                    "GUBER_CACHE_SIZE",
                    "WEIR_HTTP_MAX_QUEUE",
                    "PATH",
                    "HOME",
                    "WEIRD_THING")))
        .isEmpty();
  }

  @ParameterizedTest
  @CsvSource({
    "WEIR_CAHCE_SIZE, WEIR_CACHE_SIZE",
    "WEIR_CACHE_SIZ, WEIR_CACHE_SIZE",
    "GUBER_CACHESIZE, GUBER_CACHE_SIZE",
    "WEIR_GRPC_ADRESS, WEIR_GRPC_ADDRESS",
    "GUBER_STATIC_PEERS, WEIR_STATIC_PEERS",
    "WEIR_STATIC_PEER, WEIR_STATIC_PEERS",
  })
  void find_misspelledName_reportedWithClosestKnownName(String name, String closest) {
    assertThat(check.find(List.of(name))).containsExactly(new Unknown(name, Optional.of(closest)));
  }

  @Test
  void find_sameDistanceUnderBothPrefixes_preferSamePrefix() {
    assertThat(check.find(List.of("GUBER_CACHE_SIZ")))
        .containsExactly(new Unknown("GUBER_CACHE_SIZ", Optional.of("GUBER_CACHE_SIZE")));
  }

  @Test
  void find_nameFarFromEveryKnownName_reportedWithoutSuggestion() {
    assertThat(check.find(List.of("GUBER_DEBUG", "WEIR_X")))
        .containsExactly(
            new Unknown("GUBER_DEBUG", Optional.empty()), new Unknown("WEIR_X", Optional.empty()));
  }

  @Test
  void find_severalUnknown_sortedByName() {
    assertThat(check.find(List.of("WEIR_ZZZ", "GUBER_AAA", "WEIR_CAHCE_SIZE")))
        .extracting(Unknown::name)
        .containsExactly("GUBER_AAA", "WEIR_CAHCE_SIZE", "WEIR_ZZZ");
  }

  @ParameterizedTest
  @CsvSource({
    "CACHE_SIZE, CACHE_SIZE, 0",
    "CAHCE_SIZE, CACHE_SIZE, 1",
    "CACHE_SIZ, CACHE_SIZE, 1",
    "CACHEX_SIZE, CACHE_SIZE, 1",
    "KACHE_SIZE, CACHE_SIZE, 1",
    "CA, AC, 1",
    "ABC, CA, 3",
    "'', ABC, 3",
  })
  void distance_countsSwapOfNeighboursAsOneEdit(String a, String b, int expected) {
    assertThat(UnknownVariables.distance(a, b)).isEqualTo(expected);
    assertThat(UnknownVariables.distance(b, a)).isEqualTo(expected);
  }
}
