package dev.weir.envoy.reload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.envoy.config.ConfigException;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.reload.ConfigReloader.Outcome;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigReloaderTest {

  private static final String GOOD_A = "domain: a\n";
  private static final String GOOD_B = "domain: b\n";
  private static final String BAD = "domain: a\nbogus: 1\n";

  @TempDir Path dir;
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final ConfigHolder holder = new ConfigHolder();

  private ConfigReloader reloader(Path path) {
    return new ConfigReloader(
        path, new ConfigLoader(ConfigLoadOptions.DEFAULTS), holder, new EnvoyMetrics(registry));
  }

  private double count(String name) {
    return registry.counter("weir.envoy." + name).count();
  }

  private EnvoyConfig current() {
    return holder.current().orElseThrow();
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
    writeConfigMap("..2026_01_01_00_00_00.1", GOOD_A);
    ConfigReloader reloader = reloader(dir);
    reloader.loadInitial();

    writeConfigMap("..2026_01_01_00_01_00.2", GOOD_B);

    assertThat(reloader.reloadIfChanged()).isEqualTo(Outcome.RELOADED);
    assertThat(current().domains()).containsOnlyKeys("b");
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
        .isInstanceOf(ConfigException.class)
        .hasMessage(file + ": config error, unknown key 'bogus'");
    assertThat(holder.current()).isEmpty();
    assertThat(count("config_load_error")).isEqualTo(1);
  }

  /** Lays out a ConfigMap volume as the kubelet does and swaps {@code ..data} atomically. */
  private void writeConfigMap(String version, String content) throws IOException {
    Path versioned = Files.createDirectories(dir.resolve(version));
    Files.writeString(versioned.resolve("config.yaml"), content);
    Path tmpLink = dir.resolve("..data_tmp");
    Files.createSymbolicLink(tmpLink, Path.of(version));
    Files.move(tmpLink, dir.resolve("..data"), StandardCopyOption.ATOMIC_MOVE);
    Path visible = dir.resolve("config.yaml");
    if (!Files.isSymbolicLink(visible)) {
      Files.createSymbolicLink(visible, Path.of("..data/config.yaml"));
    }
  }
}
