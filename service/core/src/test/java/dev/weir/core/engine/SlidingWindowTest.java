package dev.weir.core.engine;

import static dev.weir.core.engine.Requests.NOW;
import static dev.weir.core.engine.Requests.sliding;
import static dev.weir.core.engine.Step.at;
import static dev.weir.core.model.Status.OVER_LIMIT;
import static dev.weir.core.model.Status.UNDER_LIMIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import dev.weir.core.model.Behavior;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class SlidingWindowTest {

  static Stream<Arguments> table() {
    return Stream.of(
        arguments(
            "the previous window weighs by its share still inside the sliding window",
            List.of(
                at(0, sliding(10, 1000, 10), UNDER_LIMIT, 0, 1000),
                at(1250, sliding(10, 1000, 0), UNDER_LIMIT, 2, 2000),
                at(1250, sliding(10, 1000, 3), OVER_LIMIT, 2, 2000),
                at(1250, sliding(10, 1000, 2), UNDER_LIMIT, 0, 2000),
                at(1500, sliding(10, 1000, 0), UNDER_LIMIT, 3, 2000))),
        arguments(
            "the weighted count is rounded up, so the limit holds exactly",
            List.of(
                at(0, sliding(10, 1000, 3), UNDER_LIMIT, 7, 1000),
                at(1333, sliding(10, 1000, 0), UNDER_LIMIT, 7, 2000),
                at(1334, sliding(10, 1000, 0), UNDER_LIMIT, 8, 2000))),
        arguments(
            "counts older than the previous window are forgotten",
            List.of(
                at(0, sliding(10, 1000, 10), UNDER_LIMIT, 0, 1000),
                at(2000, sliding(10, 1000, 0), UNDER_LIMIT, 10, 3000))),
        arguments(
            "refused hits are not counted",
            List.of(
                at(0, sliding(10, 1000, 8), UNDER_LIMIT, 2, 1000),
                at(1, sliding(10, 1000, 3), OVER_LIMIT, 2, 1000),
                at(2, sliding(10, 1000, 2), UNDER_LIMIT, 0, 1000))),
        arguments(
            "DRAIN_OVER_LIMIT takes what is left",
            List.of(
                at(0, sliding(10, 1000, 4), UNDER_LIMIT, 6, 1000),
                at(1, sliding(10, 1000, 7, Behavior.DRAIN_OVER_LIMIT), OVER_LIMIT, 0, 1000),
                at(2, sliding(10, 1000, 1), OVER_LIMIT, 0, 1000))),
        arguments(
            "RESET_REMAINING clears both windows, then applies the hits",
            List.of(
                at(0, sliding(10, 1000, 10), UNDER_LIMIT, 0, 1000),
                at(1100, sliding(10, 1000, 1, Behavior.RESET_REMAINING), UNDER_LIMIT, 9, 2000))),
        arguments(
            "negative hits take counts back",
            List.of(
                at(0, sliding(10, 1000, 5), UNDER_LIMIT, 5, 1000),
                at(1, sliding(10, 1000, -2), UNDER_LIMIT, 7, 1000))),
        arguments(
            "a limit lowered below the count makes queries OVER",
            List.of(
                at(0, sliding(10, 1000, 8), UNDER_LIMIT, 2, 1000),
                at(1, sliding(5, 1000, 0), OVER_LIMIT, 0, 1000))));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("table")
  void apply_table_weighsThePreviousWindow(String name, List<Step> steps) {
    Step.run(new Scenario(), steps);
  }

  @Test
  void apply_state_expiresWhenBothWindowsHaveSlidOut() {
    Scenario s = new Scenario();
    s.send(sliding(10, 1000, 1), NOW + 10);
    assertThat(s.state()).isEqualTo(new SlidingWindowState(10, 1000, NOW, 0, 1, NOW + 2000));
  }

  @Test
  void apply_requestOlderThanTheStoredWindow_isJudgedAtThatWindow() {
    Scenario s = new Scenario();
    s.send(sliding(10, 1000, 10), NOW);
    s.send(sliding(10, 1000, 4), NOW + 1500);
    assertThat(s.send(sliding(10, 1000, 0), NOW + 900).remaining()).isEqualTo(0);
  }
}
