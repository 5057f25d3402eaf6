package dev.weir.envoy.rlqs;

import static dev.weir.envoy.rlqs.RlqsAccuracyTest.PACE;

import dev.weir.envoy.testkit.ProxyFleet;
import dev.weir.envoy.testkit.ProxyFleet.Demand;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The accuracy figures of {@code docs/rlqs.md}: every scenario of {@link RlqsAccuracyTest} over six
 * windows, at report intervals of 1, 5 (Envoy's), 10 and 30 s, one summary line each. A long run
 * (minutes), not part of the build: {@code ./mvnw -pl envoy-adapter -am verify
 * -Dtest=RlqsAccuracyFigures -Dweir.rlqs.figures=true -Dsurefire.failIfNoSpecifiedTests=false}.
 */
@EnabledIfSystemProperty(named = "weir.rlqs.figures", matches = "true")
class RlqsAccuracyFigures {

  private record Scenario(String name, int proxies, IntFunction<Demand> demand) {}

  private static final List<Scenario> SCENARIOS =
      List.of(
          new Scenario("N=1 even", 1, i -> Demand.steady(2 * PACE)),
          new Scenario("N=5 even", 5, i -> Demand.steady(2 * PACE / 5)),
          new Scenario("N=20 even", 20, i -> Demand.steady(2 * PACE / 20)),
          new Scenario("N=5 skewed", 5, i -> Demand.steady(i == 0 ? 2 * PACE : 0.1 * PACE)),
          new Scenario("N=20 skewed", 20, i -> Demand.steady(i == 0 ? 2 * PACE : 0.025 * PACE)),
          new Scenario("N=20 skewed 3/s", 20, i -> Demand.steady(i == 0 ? 2 * PACE : 3)),
          new Scenario(
              "N=5 join+leave",
              5,
              i ->
                  new Demand(2 * PACE / 4, i == 4 ? 90_000 : 0, i == 0 ? 150_000 : Long.MAX_VALUE)),
          new Scenario("N=20 under the limit", 20, i -> Demand.steady(0.8 * PACE / 20)));

  @Test
  void printFigures() {
    StringBuilder table = new StringBuilder();
    table.append(
        "| interval | scenario | admitted/limit (max) | admitted/limit (min) |"
            + " worst denied within fair share | all denied within fair share |\n"
            + "|---|---|---|---|---|---|\n");
    for (Duration interval :
        List.of(
            Duration.ofSeconds(1),
            Duration.ofSeconds(5),
            Duration.ofSeconds(10),
            Duration.ofSeconds(30))) {
      for (Scenario s : SCENARIOS) {
        List<ProxyFleet.Window> windows =
            RlqsAccuracyTest.run(
                s.name() + ", report interval " + interval.toSeconds() + " s",
                s.proxies(),
                s.demand(),
                interval,
                Duration.ofMinutes(6));
        table.append(line(interval, s.name(), windows));
      }
    }
    table.append("\nRequests arriving at random (Poisson), report interval 5 s:\n\n");
    for (Scenario s : SCENARIOS) {
      List<ProxyFleet.Window> windows =
          RlqsAccuracyTest.run(
              s.name() + ", random arrivals",
              s.proxies(),
              i -> s.demand().apply(i).atRandom(),
              Duration.ofSeconds(5),
              Duration.ofMinutes(6));
      table.append(line(Duration.ofSeconds(5), s.name() + " (random)", windows));
    }
    System.out.println(table);
  }

  private static String line(Duration interval, String name, List<ProxyFleet.Window> windows) {
    double max = windows.stream().mapToDouble(ProxyFleet.Window::ratio).max().orElse(0);
    double min = windows.stream().mapToDouble(ProxyFleet.Window::ratio).min().orElse(0);
    double denied =
        windows.stream().mapToDouble(ProxyFleet.Window::worstDeniedWithinFairShare).max().orElse(0);
    double all =
        windows.stream().mapToDouble(ProxyFleet.Window::deniedWithinFairShare).max().orElse(0);
    return String.format(
        Locale.ROOT,
        "| %d s | %s | %.3f | %.3f | %.1f %% | %.2f %% |%n",
        interval.toSeconds(),
        name,
        max,
        min,
        100 * denied,
        100 * all);
  }
}
