package dev.weir.envoy.reload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.weir.core.model.Algorithm;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.ConfigMapVolume;
import dev.weir.envoy.config.DescriptorConfigException;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.reload.ConfigReloader.Outcome;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class ConfigReloaderTest {

  private static final String GOOD_A = "domain: a\n";
  private static final String GOOD_B = "domain: b\n";
  private static final String BAD = "domain: a\nbogus: 1\n";

  private static final Duration INTERVAL = Duration.ofSeconds(1);

  @TempDir Path dir;
  private final FakeScheduler scheduler = new FakeScheduler(new FakeClock());
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final ConfigHolder holder = new ConfigHolder();

  private ConfigReloader reloader(Path path) {
    return new ConfigReloader(
        path, new ConfigLoader(ConfigLoadOptions.DEFAULTS), holder, new EnvoyMetrics(registry));
  }

  /**
   * Returns a reloader of {@link #dir} whose compile throws what {@code error} makes each time
   * {@code throwNow} holds, and compiles as the loader does otherwise.
   */
  private ConfigReloader reloaderThrowing(
      BooleanSupplier throwNow, Supplier<? extends Error> error) {
    ConfigLoader loader = new ConfigLoader(ConfigLoadOptions.DEFAULTS);
    return new ConfigReloader(
        dir,
        loader,
        files -> {
          if (throwNow.getAsBoolean()) {
            throw error.get();
          }
          return loader.compile(files);
        },
        holder,
        new EnvoyMetrics(registry));
  }

  private double count(String name) {
    return registry.counter("weir.envoy." + name).count();
  }

  private EnvoyConfig current() {
    return holder.current().orElseThrow();
  }

  @Test
  void loadInitialUnlessMissing_missingPath_noDomainHeldNorCountedUntilItAppears()
      throws Exception {
    Path missing = dir.resolve("ratelimit");
    ConfigReloader reloader = reloader(missing);

    boolean present = reloader.loadInitialUnlessMissing();
    EnvoyConfig held = current();
    Outcome stillMissing = reloader.reloadIfChanged();
    Files.createDirectories(missing);
    Files.writeString(missing.resolve("a.yaml"), GOOD_A);
    Outcome appeared = reloader.reloadIfChanged();

    assertThat(present).isFalse();
    assertThat(held.domains()).isEmpty();
    assertThat(stillMissing).isEqualTo(Outcome.UNCHANGED);
    assertThat(appeared).isEqualTo(Outcome.RELOADED);
    assertThat(current().domains()).containsOnlyKeys("a");
    assertThat(count("config_load_error")).isZero();
  }

  @Test
  void reloadIfChanged_goodThenBadThenGood_keepsLastGoodAndCountsEachLoad() throws Exception {
    Path file = dir.resolve("config.yaml");
    Files.writeString(file, GOOD_A);
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();

    Files.writeString(file, BAD);
    Outcome bad = reloader.reloadIfChanged();
    Outcome badAgain = reloader.reloadIfChanged();
    EnvoyConfig afterBad = current();
    Files.writeString(file, GOOD_B);
    Outcome good = reloader.reloadIfChanged();

    assertThat(bad).isEqualTo(Outcome.FAILED);
    assertThat(badAgain).isEqualTo(Outcome.UNCHANGED);
    assertThat(afterBad.domains()).containsOnlyKeys("a");
    assertThat(good).isEqualTo(Outcome.RELOADED);
    assertThat(current().domains()).containsOnlyKeys("b");
    assertThat(count("config_load_success")).isEqualTo(2);
    assertThat(count("config_load_error")).isEqualTo(1);
  }

  @Test
  void reloadIfChanged_calendarRuleWithUnknownZone_failsKeepingTheLastGoodConfig()
      throws Exception {
    Path file = dir.resolve("config.yaml");
    String rule =
        "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: month,"
            + " requests_per_unit: 5, calendar: true, time_zone: %s}\n";
    Files.writeString(file, rule.formatted("Europe/Berlin"));
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();
    EnvoyConfig good = current();

    Files.writeString(file, rule.formatted("Europe/Atlantis"));
    Outcome bad = reloader.reloadIfChanged();

    assertThat(bad).isEqualTo(Outcome.FAILED);
    assertThat(current()).isSameAs(good);
    assertThat(count("config_load_error")).isEqualTo(1);
  }

  @Test
  void reloadIfChanged_configOverTheCompiledTextLimit_failsKeepingTheLastGoodConfig()
      throws Exception {
    Path file = dir.resolve("config.yaml");
    Files.writeString(file, GOOD_A);
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();
    EnvoyConfig good = current();

    // each of the 1 000 children repeats the 20 000-character key in its path and counter name
    StringBuilder longKey =
        new StringBuilder("domain: a\ndescriptors:\n  - key: " + "k".repeat(20_000) + "\n");
    longKey.append("    descriptors:\n");
    for (int i = 0; i < 1_000; i++) {
      longKey.append("      - key: c").append(i).append('\n');
    }
    Files.writeString(file, longKey);
    Outcome bad = reloader.reloadIfChanged();

    assertThat(bad).isEqualTo(Outcome.FAILED);
    assertThat(current()).isSameAs(good);
    assertThat(count("config_load_error")).isEqualTo(1);
  }

  @Test
  void reloadIfChanged_sameContent_isUnchanged() throws Exception {
    Files.writeString(dir.resolve("config.yaml"), GOOD_A);
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();

    assertThat(reloader.reloadIfChanged()).isEqualTo(Outcome.UNCHANGED);
    assertThat(count("config_load_success")).isEqualTo(1);
  }

  @Test
  void reloadIfChanged_fileAddedToDirectory_loadsBothFiles() throws Exception {
    Files.writeString(dir.resolve("a.yaml"), GOOD_A);
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();

    Files.writeString(dir.resolve("b.yaml"), GOOD_B);

    assertThat(reloader.reloadIfChanged()).isEqualTo(Outcome.RELOADED);
    assertThat(current().domains()).containsOnlyKeys("a", "b");
  }

  @Test
  void reloadIfChanged_configMapDataLinkSwap_loadsTheNewVersion() throws Exception {
    ConfigMapVolume volume = new ConfigMapVolume(dir);
    volume.publish(Map.of("config.yaml", GOOD_A));
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();

    volume.publish(Map.of("config.yaml", GOOD_B));

    assertThat(reloader.reloadIfChanged()).isEqualTo(Outcome.RELOADED);
    assertThat(current().domains()).containsOnlyKeys("b");
    assertThat(reloader.reloadIfChanged()).isEqualTo(Outcome.UNCHANGED);
  }

  @Test
  void reloadIfChanged_configMapKeyRenamedMidUpdate_keepsTheLastGoodConfigUntilTheNewLinkAppears()
      throws Exception {
    ConfigMapVolume volume = new ConfigMapVolume(dir);
    volume.publish(Map.of("a.yaml", GOOD_A));
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();
    Path next = Files.createDirectories(dir.resolve("..2026_11_30_11_00_00.1"));
    Files.writeString(next.resolve("b.yaml"), GOOD_B);
    Files.createSymbolicLink(dir.resolve("..data_tmp"), next.getFileName());
    Files.move(dir.resolve("..data_tmp"), dir.resolve("..data"), StandardCopyOption.ATOMIC_MOVE);

    Outcome midUpdate = reloader.reloadIfChanged();
    EnvoyConfig duringUpdate = current();
    Files.createSymbolicLink(dir.resolve("b.yaml"), Path.of("..data/b.yaml"));
    Outcome oldLinkStillThere = reloader.reloadIfChanged();
    EnvoyConfig withBothLinks = current();
    Files.delete(dir.resolve("a.yaml"));
    Outcome afterUpdate = reloader.reloadIfChanged();

    assertThat(midUpdate).isEqualTo(Outcome.FAILED);
    assertThat(duringUpdate.domains()).containsOnlyKeys("a");
    assertThat(oldLinkStillThere)
        .as("the same failure, not logged again")
        .isEqualTo(Outcome.UNCHANGED);
    assertThat(withBothLinks.domains()).containsOnlyKeys("a");
    assertThat(afterUpdate).isEqualTo(Outcome.RELOADED);
    assertThat(current().domains()).containsOnlyKeys("b");
  }

  @Test
  void reloadIfChanged_configMapKeyAddedMidUpdate_keepsTheLastGoodConfigUntilTheNewLinkAppears()
      throws Exception {
    String rule1 = "  - key: r1\n    rate_limit: {unit: minute, requests_per_unit: 1}\n";
    String rule2 = "  - key: r2\n    rate_limit: {unit: minute, requests_per_unit: 2}\n";
    ConfigMapVolume volume = new ConfigMapVolume(dir);
    volume.publish(Map.of("a.yaml", "domain: shop\ndescriptors:\n" + rule1 + rule2));
    ConfigReloader reloader =
        new ConfigReloader(
            dir,
            new ConfigLoader(new ConfigLoadOptions(true, Algorithm.FIXED_WINDOW)),
            holder,
            new EnvoyMetrics(registry));
    reloader.loadInitial();
    Path next = Files.createDirectories(dir.resolve("..2026_11_30_11_00_00.1"));
    Files.writeString(next.resolve("a.yaml"), "domain: shop\ndescriptors:\n" + rule1);
    Files.writeString(next.resolve("b.yaml"), "domain: shop\ndescriptors:\n" + rule2);
    Files.createSymbolicLink(dir.resolve("..data_tmp"), next.getFileName());
    Files.move(dir.resolve("..data_tmp"), dir.resolve("..data"), StandardCopyOption.ATOMIC_MOVE);

    Outcome midUpdate = reloader.reloadIfChanged();
    EnvoyConfig duringUpdate = current();
    Files.createSymbolicLink(dir.resolve("b.yaml"), Path.of("..data/b.yaml"));
    Outcome afterUpdate = reloader.reloadIfChanged();

    assertThat(midUpdate).isNotEqualTo(Outcome.RELOADED);
    assertThat(duringUpdate.domain("shop").orElseThrow().root().exact("r2", ""))
        .as("r2, moved to b.yaml, whose link is not there yet")
        .isPresent();
    assertThat(afterUpdate).isEqualTo(Outcome.RELOADED);
    assertThat(current().domain("shop").orElseThrow().root().exact("r1", "")).isPresent();
    assertThat(current().domain("shop").orElseThrow().root().exact("r2", "")).isPresent();
  }

  @Test
  void reloadIfChanged_oneOfTwoLinksLeadsToNothing_failsKeepingBothDomains() throws Exception {
    Path target = Files.createDirectories(dir.resolve("..elsewhere"));
    Files.writeString(target.resolve("b.yaml"), GOOD_B);
    Files.writeString(dir.resolve("a.yaml"), GOOD_A);
    Files.createSymbolicLink(dir.resolve("b.yaml"), Path.of("..elsewhere/b.yaml"));
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();

    Files.delete(target.resolve("b.yaml"));
    Outcome outcome = reloader.reloadIfChanged();

    assertThat(outcome).isEqualTo(Outcome.FAILED);
    assertThat(current().domains()).containsOnlyKeys("a", "b");
  }

  @Test
  void reloadIfChanged_toNoDomain_failsKeepingTheLastGoodConfig() throws Exception {
    Path file = dir.resolve("config.yaml");
    Files.writeString(file, GOOD_A);
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();

    Files.delete(file);

    assertThat(reloader.reloadIfChanged()).isEqualTo(Outcome.FAILED);
    assertThat(current().domains()).containsOnlyKeys("a");
    assertThat(count("config_load_error")).isEqualTo(1);
  }

  static Stream<Arguments> hostileFiles() {
    StringBuilder bomb = new StringBuilder("domain: a\ndescriptors:\n  - key: k\n    metadata:\n");
    bomb.append("      l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i <= 24; i++) {
      bomb.append("      l" + i + ": &l" + i + " [*l" + (i - 1) + ", *l" + (i - 1) + "]\n");
    }
    return Stream.of(
        Arguments.of("recursive alias", "domain: a\ndescriptors: &d [{key: a, descriptors: *d}]\n"),
        Arguments.of("alias bomb", bomb.toString()),
        Arguments.of("oversized file", "domain: a\n#" + "x".repeat(2 * 1024 * 1024)));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("hostileFiles")
  void watch_hostileFileThenValidChange_failsOnceAndThenLoadsTheChange(String kind, String content)
      throws Exception {
    Path file = dir.resolve("config.yaml");
    Files.writeString(file, GOOD_A);
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();
    reloader.start(scheduler, INTERVAL);

    Files.writeString(file, content);
    assertTimeoutPreemptively(Duration.ofSeconds(10), () -> scheduler.advance(INTERVAL));
    EnvoyConfig afterHostile = current();
    Files.writeString(file, GOOD_B);
    scheduler.advance(INTERVAL);

    assertThat(afterHostile.domains()).containsOnlyKeys("a");
    assertThat(count("config_load_error")).isEqualTo(1);
    assertThat(current().domains()).containsOnlyKeys("b");
    assertThat(count("config_load_success")).isEqualTo(2);
  }

  @Test
  void watch_errorThrownWhileCompiling_isCountedAndLaterChangesStillLoad() throws Exception {
    Path file = dir.resolve("config.yaml");
    Files.writeString(file, GOOD_A);
    AtomicBoolean overflowNext = new AtomicBoolean();
    ConfigReloader reloader =
        reloaderThrowing(() -> overflowNext.getAndSet(false), StackOverflowError::new);
    reloader.loadInitial();
    reloader.start(scheduler, INTERVAL);

    overflowNext.set(true);
    Files.writeString(file, GOOD_B);
    scheduler.advance(INTERVAL);
    EnvoyConfig afterError = current();
    Files.writeString(file, "domain: c\n");
    scheduler.advance(INTERVAL);

    assertThat(afterError.domains()).containsOnlyKeys("a");
    assertThat(count("config_load_error")).isEqualTo(1);
    assertThat(current().domains()).containsOnlyKeys("c");
  }

  @Test
  void reloadIfChanged_errorThrownOnceWhileCompiling_isRetriedAtTheNextCheck() throws Exception {
    Path file = dir.resolve("config.yaml");
    Files.writeString(file, GOOD_A);
    AtomicBoolean outOfMemoryNext = new AtomicBoolean();
    ConfigReloader reloader =
        reloaderThrowing(
            () -> outOfMemoryNext.getAndSet(false), () -> new OutOfMemoryError("Java heap space"));
    reloader.loadInitial();

    outOfMemoryNext.set(true);
    Files.writeString(file, GOOD_B);
    Outcome first = reloader.reloadIfChanged();
    Outcome second = reloader.reloadIfChanged();

    assertThat(first).isEqualTo(Outcome.FAILED);
    assertThat(second).isEqualTo(Outcome.RELOADED);
    assertThat(current().domains()).containsOnlyKeys("b");
    assertThat(count("config_load_error")).isEqualTo(1);
    assertThat(count("config_load_success")).isEqualTo(2);
  }

  @Test
  void reloadIfChanged_errorThrownAtEveryCompile_isRetriedOnceAndCountedOnce() throws Exception {
    Path file = dir.resolve("config.yaml");
    Files.writeString(file, GOOD_A);
    AtomicInteger compiles = new AtomicInteger();
    ConfigReloader reloader =
        reloaderThrowing(() -> compiles.incrementAndGet() > 1, StackOverflowError::new);
    reloader.loadInitial();

    Files.writeString(file, GOOD_B);
    Outcome first = reloader.reloadIfChanged();
    Outcome second = reloader.reloadIfChanged();
    Outcome third = reloader.reloadIfChanged();

    assertThat(first).isEqualTo(Outcome.FAILED);
    assertThat(second).isEqualTo(Outcome.FAILED);
    assertThat(third).isEqualTo(Outcome.UNCHANGED);
    assertThat(compiles).hasValue(3);
    assertThat(current().domains()).containsOnlyKeys("a");
    assertThat(count("config_load_error")).isEqualTo(1);
  }

  @Test
  void reloadIfChanged_listenerThrowsAnError_countsTheSwapAsLoaded() throws Exception {
    Path file = dir.resolve("config.yaml");
    Files.writeString(file, GOOD_A);
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();
    holder.onChange(
        () -> {
          throw new NoClassDefFoundError("dev/weir/Missing");
        });

    Files.writeString(file, GOOD_B);
    Outcome outcome = reloader.reloadIfChanged();

    assertThat(outcome).isEqualTo(Outcome.RELOADED);
    assertThat(current().domains()).containsOnlyKeys("b");
    assertThat(count("config_load_success")).isEqualTo(2);
    assertThat(count("config_load_error")).isZero();
  }

  @Test
  void close_stopsTheChecks() throws Exception {
    Files.writeString(dir.resolve("config.yaml"), GOOD_A);
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();
    reloader.start(scheduler, INTERVAL);
    scheduler.advance(INTERVAL);

    reloader.close();

    assertThat(scheduler.pending()).isZero();
  }

  @Test
  void reloadIfChanged_pathRemoved_failsAndKeepsConfig() throws Exception {
    Path file = dir.resolve("config.yaml");
    Files.writeString(file, GOOD_A);
    ConfigReloader reloader = reloader(file);
    reloader.loadInitial();

    Files.delete(file);

    assertThat(reloader.reloadIfChanged()).isEqualTo(Outcome.FAILED);
    assertThat(current().domains()).containsOnlyKeys("a");
  }

  @Test
  void loadInitial_invalidConfig_throwsAndCountsTheError() throws Exception {
    Path file = dir.resolve("config.yaml");
    Files.writeString(file, BAD);
    ConfigReloader reloader = reloader(file);

    assertThatThrownBy(reloader::loadInitial)
        .isInstanceOf(DescriptorConfigException.class)
        .hasMessage(
            file
                + ": config error, unknown key 'bogus': in the top-level map at line 2; allowed keys"
                + " are domain, descriptors");
    assertThat(holder.current()).isEmpty();
    assertThat(count("config_load_error")).isEqualTo(1);
  }
}
