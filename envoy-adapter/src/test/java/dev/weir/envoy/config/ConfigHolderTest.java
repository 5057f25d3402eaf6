package dev.weir.envoy.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class ConfigHolderTest {

  private static EnvoyConfig config(String domain) throws DescriptorConfigException {
    return new ConfigLoader(ConfigLoadOptions.DEFAULTS)
        .compile(List.of(new ConfigFile(domain + ".yaml", "domain: " + domain + "\n")));
  }

  @Test
  void set_runsEveryListenerAfterTheSwap_seeingTheNewConfig() throws DescriptorConfigException {
    ConfigHolder holder = new ConfigHolder(config("before"));
    List<String> seen = new ArrayList<>();
    holder.onChange(() -> seen.add("a:" + holder.current().orElseThrow().domains().keySet()));
    holder.onChange(() -> seen.add("b:" + holder.current().orElseThrow().domains().keySet()));

    holder.set(config("after"));

    assertThat(seen).containsExactly("a:[after]", "b:[after]");
  }

  @Test
  void set_aListenerThatThrows_leavesTheNewConfigInPlaceAndTheOthersRun()
      throws DescriptorConfigException {
    ConfigHolder holder = new ConfigHolder(config("before"));
    List<String> seen = new ArrayList<>();
    holder.onChange(
        () -> {
          throw new IllegalStateException("listener broke");
        });
    holder.onChange(() -> seen.add("b:" + holder.current().orElseThrow().domains().keySet()));

    holder.set(config("after"));

    assertThat(holder.current().orElseThrow().domains()).containsOnlyKeys("after");
    assertThat(seen).containsExactly("b:[after]");
  }

  @Test
  void set_aListenerThatThrowsAnError_leavesTheNewConfigInPlaceAndTheOthersRun()
      throws DescriptorConfigException {
    ConfigHolder holder = new ConfigHolder(config("before"));
    List<String> seen = new ArrayList<>();
    holder.onChange(
        () -> {
          throw new NoClassDefFoundError("dev/weir/Missing");
        });
    holder.onChange(() -> seen.add("b:" + holder.current().orElseThrow().domains().keySet()));

    holder.set(config("after"));

    assertThat(holder.current().orElseThrow().domains()).containsOnlyKeys("after");
    assertThat(seen).containsExactly("b:[after]");
  }
}
