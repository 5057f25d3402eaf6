package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.limiter.HealthStatus;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class DrainingHealthTest {

  private HealthStatus delegateHealth = new HealthStatus(true, "", 1, "a:1", List.of("a:1"));
  private final DrainingHealth service = new DrainingHealth(() -> delegateHealth);

  @Test
  void health_configRequiredAndMissing_unhealthyNamingIt() {
    service.requireConfig(() -> false);

    assertThat(service.health())
        .isEqualTo(
            new HealthStatus(
                false, "no rate limit configuration is loaded", 1, "a:1", List.of("a:1")));
  }

  @Test
  void health_configMissingAndDelegateUnhealthy_keepsTheDelegatesMessageAfterIt() {
    delegateHealth = new HealthStatus(false, "peer b:1 failed", 2, "a:1", List.of("a:1", "b:1"));
    service.requireConfig(() -> false);

    assertThat(service.health().message())
        .isEqualTo("no rate limit configuration is loaded; peer b:1 failed");
  }

  @Test
  void health_configLoadedLater_healthyAgain() {
    AtomicBoolean loaded = new AtomicBoolean();
    service.requireConfig(loaded::get);
    boolean before = service.health().healthy();

    loaded.set(true);

    assertThat(before).isFalse();
    assertThat(service.health()).isEqualTo(delegateHealth);
  }

  @Test
  void health_draining_shuttingDownWinsOverMissingConfig() {
    service.requireConfig(() -> false);

    service.startDraining();

    assertThat(service.health().message()).isEqualTo("shutting down");
  }
}
