package dev.weir.core.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class RequestValidatorTest {

  private static RateLimitRequest.Builder valid() {
    return RateLimitRequest.builder("name", "key").limit(10).duration(1000).hits(1);
  }

  static Stream<Arguments> errors() {
    return Stream.of(
        arguments(
            RateLimitRequest.builder("", "").limit(-1).build(),
            "field 'unique_key' cannot be empty"),
        arguments(
            RateLimitRequest.builder("", "key").algorithmNumber(9).build(),
            "field 'namespace' cannot be empty"),
        arguments(
            RateLimitRequest.builder("weir:stand-in:api", "key").algorithmNumber(9).build(),
            "field 'name' cannot start with 'weir:stand-in:' (reserved for the buckets a node"
                + " keeps when it stands in for an owner), got 'weir:stand-in:api'"),
        arguments(valid().algorithmNumber(9).limit(-1).build(), "Invalid rate limit algorithm '9'"),
        arguments(valid().algorithmNumber(-1).build(), "Invalid rate limit algorithm '-1'"),
        arguments(
            valid().limit(-5).duration(-1).build(), "field 'limit' cannot be negative, got -5"),
        arguments(valid().duration(-1).build(), "field 'duration' cannot be negative, got -1"),
        arguments(
            valid().duration(-1).behavior(Behavior.DURATION_IS_GREGORIAN).build(),
            "field 'duration' cannot be negative, got -1"),
        arguments(
            valid().algorithm(Algorithm.LEAKY_BUCKET).burst(-3).build(),
            "field 'burst' cannot be negative, got -3"),
        arguments(
            valid().duration(6).behavior(Behavior.DURATION_IS_GREGORIAN).build(),
            RequestValidator.INVALID_GREGORIAN
                + ": got 6; allowed are 0 (minute), 1 (hour), 2 (day), 3 (week), 4 (month),"
                + " 5 (year)"));
  }

  @ParameterizedTest(name = "{1}")
  @MethodSource("errors")
  void validate_invalidRequest_reportsFirstErrorInGubernatorsOrder(
      RateLimitRequest request, String error) {
    assertThat(RequestValidator.validate(request)).contains(error);
  }

  @Test
  void validate_namesThatOnlyResembleTheReservedPrefix_areValid() {
    for (String name : new String[] {"weir:stand-in", "weir:standin:api", "api:weir:stand-in:"}) {
      assertThat(RequestValidator.validate(valid().build().withName(name))).as(name).isEmpty();
    }
  }

  @Test
  void validate_everyAlgorithmAndGregorianCode_isValid() {
    for (Algorithm a : Algorithm.values()) {
      for (int code = 0; code <= 5; code++) {
        RateLimitRequest r =
            valid().algorithm(a).duration(code).behavior(Behavior.DURATION_IS_GREGORIAN).build();
        assertThat(RequestValidator.validate(r)).as("%s code %d", a, code).isEmpty();
      }
    }
  }

  @Test
  void validateConfig_emptyKeyAndName_isNotItsConcern() {
    assertThat(RequestValidator.validateConfig(RateLimitRequest.builder("", "").build())).isEmpty();
  }
}
