package dev.weir.envoy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.FakeClock;
import dev.weir.envoy.config.DescriptorConfigException;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.reload.ConfigReloader.Outcome;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EnvoyAdapterTest {

  @TempDir Path dir;
  private final FakeClock clock = new FakeClock();

  private EnvoyAdapter start(Map<String, String> env) throws Exception {
    Map<String, String> withConfig = new HashMap<>(env);
    withConfig.put(EnvoySettings.CONFIG.name(), dir.toString());
    return EnvoyAdapter.start(
        EnvoySettings.fromEnvironment(withConfig),
        new UnusedService(),
        clock,
        new EnvoyMetrics(new SimpleMeterRegistry()),
        InputLimits.DEFAULTS,
        CheckMeter.NOOP);
  }

  @Test
  void start_directoryWithoutDomain_refusedNamingThePathWhatItFoundAndTheOptIn() {
    assertThatThrownBy(() -> start(Map.of()))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .singleElement()
                    .asString()
                    .startsWith(dir + ": no rate limit domain loaded (WEIR_ENVOY_CONFIG)")
                    .contains("the directory is empty")
                    .contains("WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG=true"));
  }

  @Test
  void start_withoutDomainButForced_hasNoDomainsUntilAReloadBringsOne() throws Exception {
    try (EnvoyAdapter adapter =
        start(Map.of("WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG", "true"))) {
      boolean before = adapter.hasDomains();
      Files.writeString(dir.resolve("shop.yaml"), "domain: shop\n");
      Outcome reload = adapter.reloader().reloadIfChanged();

      assertThat(before).isFalse();
      assertThat(reload).isEqualTo(Outcome.RELOADED);
      assertThat(adapter.hasDomains()).isTrue();
    }
  }

  @Test
  void start_withADomain_hasDomains() throws Exception {
    Files.writeString(dir.resolve("shop.yaml"), "domain: shop\n");

    try (EnvoyAdapter adapter = start(Map.of())) {
      assertThat(adapter.hasDomains()).isTrue();
    }
  }

  /** A core service these tests never call. */
  private static final class UnusedService implements RateLimitService {
    @Override
    public CompletableFuture<List<RateLimitResponse>> decide(List<RateLimitRequest> requests) {
      throw new UnsupportedOperationException("not called");
    }
  }
}
