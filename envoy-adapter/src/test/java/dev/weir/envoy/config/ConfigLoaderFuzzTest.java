package dev.weir.envoy.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.junit.FuzzTest;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Coverage-guided fuzzing of the descriptor YAML loader: any text compiles or is refused with a
 * {@link DescriptorConfigException} whose every error names the file; no other exception or error
 * escapes. Seeds: {@code ConfigLoaderFuzzTestInputs/compile} in the test resources.
 */
class ConfigLoaderFuzzTest {

  private static final String FILE = "fuzzed.yaml";
  private static final ConfigLoader LOADER = new ConfigLoader(ConfigLoadOptions.DEFAULTS);

  @FuzzTest(maxDuration = "10s")
  @DictionaryEntries({
    "domain: ",
    "descriptors:",
    "- key: ",
    "value: ",
    "rate_limit: ",
    "rate_limits:",
    "unit: ",
    "requests_per_unit: ",
    "unlimited: true",
    "shadow_mode: true",
    "replaces: [{name: a}]",
    "name: ",
    "detailed_metric: ",
    "share_threshold: true",
    "algorithm: ",
    "burst: ",
    "behavior: [global]",
    "unit_multiplier: ",
    "second",
    "minute",
    "leaky_bucket",
    "&a ",
    "*a",
    "<<: ",
    "!!binary ",
    "!!int ",
    "{",
    "}",
    "[",
    "]",
    "'*'"
  })
  void compile(byte[] input) {
    String text = new String(input, StandardCharsets.UTF_8);
    try {
      LOADER.compile(List.of(new ConfigFile(FILE, text)));
    } catch (DescriptorConfigException e) {
      assertThat(e.errors()).allSatisfy(error -> assertThat(error).startsWith(FILE + ": "));
    }
  }
}
