package dev.weir.core.health;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class HealthCheckerTest {

  private final AtomicReference<ComponentHealth> discovery =
      new AtomicReference<>(ComponentHealth.ok());
  private final AtomicReference<ComponentHealth> peers =
      new AtomicReference<>(ComponentHealth.ok());
  private final DrainingComponent draining = new DrainingComponent();
  private final java.util.concurrent.atomic.AtomicBoolean configLoaded =
      new java.util.concurrent.atomic.AtomicBoolean(true);
  private final ConfigComponent config = new ConfigComponent(configLoaded::get);
  private final HealthChecker checker =
      new HealthChecker()
          .add(HealthComponent.of("discovery", discovery::get))
          .add(peersComponent())
          .add(draining)
          .add(config);

  private HealthComponent peersComponent() {
    return new HealthComponent() {
      @Override
      public String name() {
        return "peers";
      }

      @Override
      public ComponentHealth status() {
        return peers.get();
      }

      @Override
      public boolean gatesReadiness() {
        return false;
      }
    };
  }

  @Test
  void check_allWell_readyHealthyNoMessage() {
    HealthReport report = checker.report();

    assertThat(report.ready()).isTrue();
    assertThat(report.healthy()).isTrue();
    assertThat(report.message()).isEmpty();
    assertThat(report.components())
        .extracting(HealthReport.Entry::name)
        .containsExactly("discovery", "peers", "draining", "config");
  }

  @Test
  void check_peerTrouble_readyButUnhealthy() {
    peers.set(ComponentHealth.unhealthy("peer 'b:1' is down"));

    HealthReport report = checker.report();

    assertThat(report.ready()).isTrue();
    assertThat(report.healthy()).isFalse();
    assertThat(report.message()).isEqualTo("peer 'b:1' is down");
  }

  @Test
  void check_draining_notReadyAndSaysShuttingDownBeforePeerTrouble() {
    peers.set(ComponentHealth.unhealthy("peer 'b:1' is down"));

    draining.start();
    HealthReport report = checker.report();

    assertThat(report.ready()).isFalse();
    assertThat(report.message()).isEqualTo("shutting down|peer 'b:1' is down");
  }

  @Test
  void check_configNotLoadedThenLoaded_notReadyOnlyMeanwhile() {
    configLoaded.set(false);
    HealthReport missing = checker.report();
    configLoaded.set(true);

    assertThat(missing.ready()).isFalse();
    assertThat(missing.message()).isEqualTo("no rate limit configuration is loaded");
    assertThat(checker.ready()).isTrue();
  }

  @Test
  void check_healthyComponentWithANote_readyHealthyAndNoteReported() {
    discovery.set(ComponentHealth.ok("etcd unreachable; keeping the last 3 peers"));

    HealthReport report = checker.report();

    assertThat(report.ready()).isTrue();
    assertThat(report.healthy()).isTrue();
    assertThat(report.message()).isEqualTo("etcd unreachable; keeping the last 3 peers");
  }

  @Test
  void add_sameNameTwice_refusedNamingIt() {
    assertThatThrownBy(() -> checker.add(new DrainingComponent()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("a health component named 'draining' is already registered");
  }
}
