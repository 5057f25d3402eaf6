package dev.weir.core.engine;

import static dev.weir.core.engine.Requests.fixed;
import static dev.weir.core.engine.Step.at;
import static dev.weir.core.model.Status.OVER_LIMIT;
import static dev.weir.core.model.Status.UNDER_LIMIT;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import dev.weir.core.model.Behavior;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class FixedWindowTest {

  static Stream<Arguments> table() {
    return Stream.of(
        arguments(
            "every hit is counted; over once the count exceeds the limit",
            List.of(
                at(0, fixed(3, 1000, 1), UNDER_LIMIT, 2, 1000),
                at(1, fixed(3, 1000, 2), UNDER_LIMIT, 0, 1000),
                at(2, fixed(3, 1000, 1), OVER_LIMIT, 0, 1000),
                at(3, fixed(3, 1000, 0), OVER_LIMIT, 0, 1000))),
        arguments(
            "windows are aligned to the epoch; the next one starts from zero",
            List.of(
                at(500, fixed(3, 1000, 3), UNDER_LIMIT, 0, 1000),
                at(999, fixed(3, 1000, 1), OVER_LIMIT, 0, 1000),
                at(1000, fixed(3, 1000, 1), UNDER_LIMIT, 2, 2000))),
        arguments(
            "a request above the limit is refused and still counted",
            List.of(
                at(0, fixed(3, 1000, 5), OVER_LIMIT, 0, 1000),
                at(1, fixed(3, 1000, 1), OVER_LIMIT, 0, 1000))),
        arguments(
            "DRAIN_OVER_LIMIT changes nothing: a refused request already fills the window",
            List.of(
                at(0, fixed(3, 1000, 2), UNDER_LIMIT, 1, 1000),
                at(1, fixed(3, 1000, 2, Behavior.DRAIN_OVER_LIMIT), OVER_LIMIT, 0, 1000),
                at(2, fixed(3, 1000, 0), OVER_LIMIT, 0, 1000))),
        arguments(
            "RESET_REMAINING clears the window, then counts the hits",
            List.of(
                at(0, fixed(3, 1000, 3), UNDER_LIMIT, 0, 1000),
                at(1, fixed(3, 1000, 1, Behavior.RESET_REMAINING), UNDER_LIMIT, 2, 1000))),
        arguments(
            "negative hits take counts back",
            List.of(
                at(0, fixed(3, 1000, 3), UNDER_LIMIT, 0, 1000),
                at(1, fixed(3, 1000, -2), UNDER_LIMIT, 2, 1000))),
        arguments(
            "a changed limit applies to the current count",
            List.of(
                at(0, fixed(3, 1000, 3), UNDER_LIMIT, 0, 1000),
                at(1, fixed(5, 1000, 0), UNDER_LIMIT, 2, 1000))),
        arguments(
            "a changed duration starts a new window",
            List.of(
                at(0, fixed(3, 1000, 3), UNDER_LIMIT, 0, 1000),
                at(1, fixed(3, 2000, 1), UNDER_LIMIT, 2, 2000))),
        arguments(
            "duration 0 counts as 1 ms windows",
            List.of(
                at(0, fixed(3, 0, 3), UNDER_LIMIT, 0, 1),
                at(0, fixed(3, 0, 1), OVER_LIMIT, 0, 1),
                at(1, fixed(3, 0, 1), UNDER_LIMIT, 2, 2))));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("table")
  void apply_table_countsLikeEnvoyRatelimit(String name, List<Step> steps) {
    Step.run(new Scenario(), steps);
  }
}
