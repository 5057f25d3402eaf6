package dev.weir.envoy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.io.TempDir;

class ConfigLoaderTest {

  @TempDir Path dir;

  private static EnvoyConfig load(Path path, ConfigLoadOptions options)
      throws DescriptorConfigException {
    return new ConfigLoader(options).load(path);
  }

  @Test
  void load_fullFile_compilesEveryField() throws DescriptorConfigException {
    EnvoyConfig config = load(Fixtures.path("valid/full.yaml"), ConfigLoadOptions.DEFAULTS);

    DescriptorLevel root = config.domain("shop").orElseThrow().root();
    RateLimitRule perIp = root.exact("remote_address", "").orElseThrow().rule().orElseThrow();
    assertThat(perIp)
        .isEqualTo(
            new RateLimitRule(
                2, Unit.MINUTE, false, "per-ip", List.of(), Algorithm.FIXED_WINDOW, 0, 0));
    DescriptorNode user =
        root.exact("path", "/api").orElseThrow().children().exact("user", "").orElseThrow();
    assertThat(user.path()).isEqualTo("path_/api.user");
    assertThat(user.rule().orElseThrow().unit()).isEqualTo(Unit.WEEK);
    assertThat(user.rule().orElseThrow().requestsPerUnit()).isEqualTo(4_294_967_295L);
    DescriptorNode files = root.wildcards().get(0);
    assertThat(files.value()).isEqualTo("report*");
    assertThat(files.shareThreshold()).isTrue();
    assertThat(files.shadowMode()).isTrue();
    assertThat(files.metadata()).isEqualTo(Map.of("owner", "team-a", "tags", List.of("one", 2.0)));
    assertThat(files.rule().orElseThrow())
        .isEqualTo(
            new RateLimitRule(
                10,
                Unit.HOUR,
                false,
                "",
                List.of(),
                Algorithm.LEAKY_BUCKET,
                20,
                Behavior.GLOBAL | Behavior.DRAIN_OVER_LIMIT));
    RateLimitRule internal = root.exact("internal", "").orElseThrow().rule().orElseThrow();
    assertThat(internal.unlimited()).isTrue();
    assertThat(internal.unit()).isEqualTo(Unit.UNKNOWN);
    assertThat(internal.replaces()).containsExactly("per-ip");
    assertThat(root.exact("whitelisted", "").orElseThrow().rule()).isEmpty();
  }

  @Test
  void load_defaultAlgorithmOption_appliesToRulesNamingNone() throws DescriptorConfigException {
    EnvoyConfig config =
        load(
            Fixtures.path("valid/full.yaml"), new ConfigLoadOptions(false, Algorithm.TOKEN_BUCKET));

    DescriptorLevel root = config.domain("shop").orElseThrow().root();
    assertThat(root.exact("remote_address", "").orElseThrow().rule().orElseThrow().algorithm())
        .isEqualTo(Algorithm.TOKEN_BUCKET);
    assertThat(root.wildcards().get(0).rule().orElseThrow().algorithm())
        .isEqualTo(Algorithm.LEAKY_BUCKET);
  }

  @Test
  void load_directory_readsEveryFileWhateverItsExtensionAndSkipsDotfiles() throws Exception {
    Files.writeString(dir.resolve("a.yaml"), "domain: one\n");
    Files.writeString(dir.resolve("b.yml"), "domain: two\n");
    Files.writeString(dir.resolve("ratelimit.conf"), "domain: three\n");
    Files.createDirectories(dir.resolve("config"));
    Files.writeString(dir.resolve("config/rules"), "domain: four\n");
    Files.writeString(dir.resolve(".hidden.yaml"), "not: valid\n");

    EnvoyConfig config = load(dir, ConfigLoadOptions.DEFAULTS);

    assertThat(config.domains()).containsOnlyKeys("one", "two", "three", "four");
  }

  @Test
  void load_directoryHoldingAFileThatIsNotADescriptorConfig_failsNamingIt() throws Exception {
    Files.writeString(dir.resolve("a.yaml"), "domain: one\n");
    Files.writeString(dir.resolve("notes.txt"), "not yaml");

    assertThatThrownBy(() -> load(dir, ConfigLoadOptions.DEFAULTS))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .containsExactly(
                        dir.resolve("notes.txt")
                            + ": error loading config file: yaml: unmarshal errors: line 1:"
                            + " cannot unmarshal !!str `not yaml` into map"));
  }

  @Test
  void load_kubernetesConfigMapLayout_readsFilesThroughDataLink() throws Exception {
    new ConfigMapVolume(dir).publish(Map.of("config.yaml", "domain: shop\n"));

    EnvoyConfig config = load(dir, ConfigLoadOptions.DEFAULTS);

    assertThat(config.domains()).containsOnlyKeys("shop");
  }

  @Test
  void validate_directoryWithSeveralBadFiles_reportsEveryError() throws Exception {
    Files.writeString(dir.resolve("a.yaml"), "domain: shop\n");
    Files.writeString(dir.resolve("b.yaml"), "domain: shop\n");
    Files.writeString(dir.resolve("c.yaml"), "descriptors: []\n");
    Files.writeString(dir.resolve("d.yaml"), "domain: ok\n");

    List<String> errors = new ConfigValidator(ConfigLoadOptions.DEFAULTS).validate(dir);

    assertThat(errors)
        .containsExactly(
            dir.resolve("b.yaml")
                + ": duplicate domain 'shop' in config file: "
                + dir.resolve("a.yaml")
                + " declares it too; allowed is one file per domain, or several whose top-level"
                + " descriptors are merged, with WEIR_ENVOY_MERGE_DOMAIN_CONFIG=true",
            dir.resolve("c.yaml") + ": config file cannot have empty domain");
  }

  @Test
  void validate_validFile_returnsNoError() {
    assertThat(
            new ConfigValidator(ConfigLoadOptions.DEFAULTS)
                .validate(Fixtures.path("valid/full.yaml")))
        .isEmpty();
  }

  @Test
  void validate_missingPath_reportsIt() {
    Path missing = dir.resolve("missing.yaml");

    assertThat(new ConfigValidator(ConfigLoadOptions.DEFAULTS).validate(missing))
        .containsExactly(missing + ": config path does not exist");
  }

  @Test
  void run_badFile_printsEveryErrorAndReturnsNonZero() throws Exception {
    Files.writeString(dir.resolve("a.yaml"), "domain: shop\nbogus: 1\n");
    var err = new java.io.ByteArrayOutputStream();
    var out = new java.io.ByteArrayOutputStream();

    int code =
        new ConfigValidator(ConfigLoadOptions.DEFAULTS)
            .run(dir, new java.io.PrintStream(out, true), new java.io.PrintStream(err, true));

    assertThat(code).isEqualTo(1);
    assertThat(err.toString())
        .isEqualTo(
            dir.resolve("a.yaml")
                + ": config error, unknown key 'bogus': in the top-level map at line 2; allowed"
                + " keys are domain, descriptors"
                + System.lineSeparator());
    assertThat(out.toString()).isEmpty();
  }

  @Test
  void validate_directoryWithNoFile_reportsNoDomainWithWhatItFoundAndTheOptIn() throws Exception {
    Files.createDirectories(dir.resolve("..2026_11_30_10_00_00.1"));
    Files.createSymbolicLink(dir.resolve("..data"), Path.of("..2026_11_30_10_00_00.1"));

    assertThat(new ConfigValidator(ConfigLoadOptions.DEFAULTS).validate(dir))
        .containsExactly(
            dir
                + ": no rate limit domain loaded (WEIR_ENVOY_CONFIG), so every request would be"
                + " allowed: found no file to load, only skipped entries (..2026_11_30_10_00_00.1,"
                + " ..data; names starting with '.' are skipped). Add a"
                + " descriptor file (any name not starting with '.'), or set"
                + " WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG=true to start without one (the"
                + " node then reports not ready until a config with a domain loads)");
  }

  @Test
  void validate_emptyDirectoryWithForceStart_returnsNoError() {
    assertThat(new ConfigValidator(ConfigLoadOptions.DEFAULTS, true).validate(dir)).isEmpty();
  }

  @Test
  void run_recursiveAlias_printsOneLineAndReturnsOne() throws Exception {
    Path file = dir.resolve("a.yaml");
    Files.writeString(file, "domain: a\ndescriptors: &d [{key: a, descriptors: *d}]\n");
    var err = new java.io.ByteArrayOutputStream();

    int code =
        new ConfigValidator(ConfigLoadOptions.DEFAULTS)
            .run(
                file,
                new java.io.PrintStream(new java.io.ByteArrayOutputStream(), true),
                new java.io.PrintStream(err, true));

    assertThat(code).isEqualTo(1);
    assertThat(err.toString())
        .isEqualTo(
            file
                + ": error loading config file: recursive alias: the list at line 2 contains itself"
                + System.lineSeparator());
  }

  @Test
  void compile_metadataWithNumberBooleanAndNullKeys_keysAsEnvoysServiceReadsThem()
      throws Exception {
    String yaml =
        """
        domain: shop
        descriptors:
          - key: a
            metadata:
              404: a
              0x1F: top
              ~: none
              nested:
                true: b
                1.50: c
                1e6: d
                0x1F: e
                0.00001: f
                123456.7: g
                ~: h
                2024-01-02: i
                -0.0: j
                .inf: k
        """;

    EnvoyConfig config =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(List.of(new ConfigFile("m.yaml", yaml)));

    Map<String, Object> metadata =
        config.domain("shop").orElseThrow().root().nodes().get(0).metadata();
    assertThat(metadata)
        .as("keys of metadata itself, decoded into Go strings: their text as written")
        .containsOnlyKeys("404", "0x1F", "", "nested");
    assertThat(metadata.get("404")).isEqualTo("a");
    @SuppressWarnings("unchecked")
    Map<String, Object> nested = (Map<String, Object>) metadata.get("nested");
    assertThat(nested)
        .as("nested keys, decoded as values and printed by fmt's %v")
        .containsOnlyKeys(
            "true", "1.5", "1e+06", "31", "1e-05", "123456.7", "<nil>", "2024-01-02", "-0", "+Inf");
  }

  @Test
  void compile_metadataNumberBeyondDoubleRange_keptAsTextAsEnvoysServiceKeepsIt()
      throws Exception {
    String huge = "1" + "0".repeat(400);
    String yaml =
        "domain: shop\n"
            + "descriptors:\n"
            + "  - key: a\n"
            + "    metadata:\n"
            + "      big: 1e400\n"
            + "      huge: "
            + huge
            + "\n"
            + "      list: [-1e400]\n"
            + "      nested: {1e400: x}\n"
            + "      hex: 0x1_0000_0000_0000_0000\n"
            + "      wide: 0xFFFFFFFFFFFFFFFFFFFF\n"
            + "      keys: {0xFFFFFFFFFFFFFFFFFFFF: x}\n";

    EnvoyConfig config =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(List.of(new ConfigFile("m.yaml", yaml)));

    Map<String, Object> metadata =
        config.domain("shop").orElseThrow().root().nodes().get(0).metadata();
    assertThat(metadata)
        .as("yaml.v2 reads a number Go's ParseFloat cannot hold as text, never as infinity")
        .containsEntry("big", "1e400")
        .containsEntry("huge", huge)
        .containsEntry("list", List.of("-1e400"))
        .containsEntry("nested", Map.of("1e400", "x"))
        .containsEntry("hex", "0x1_0000_0000_0000_0000")
        .containsEntry("wide", "0xFFFFFFFFFFFFFFFFFFFF")
        .containsEntry("keys", Map.of("0xFFFFFFFFFFFFFFFFFFFF", "x"));
  }

  @Test
  void compile_metadataBase60Number_keptAsTextAsEnvoysServiceKeepsIt() throws Exception {
    String yaml =
        "domain: shop\n"
            + "descriptors:\n"
            + "  - key: a\n"
            + "    metadata: {t: 1:30.5, list: [-1:30.5], nested: {1:30.5: x}}\n";

    EnvoyConfig config =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(List.of(new ConfigFile("m.yaml", yaml)));

    Map<String, Object> metadata =
        config.domain("shop").orElseThrow().root().nodes().get(0).metadata();
    assertThat(metadata)
        .as("yaml.v2 has no base-60 numbers, so it keeps 1:30.5 as text")
        .containsEntry("t", "1:30.5")
        .containsEntry("list", List.of("-1:30.5"))
        .containsEntry("nested", Map.of("1:30.5", "x"));
  }

  @Test
  void compile_booleansWrittenYAndN_readAsEnvoysServiceReadsThem() throws Exception {
    String yaml =
        """
        domain: d
        descriptors:
          - key: internal
            rate_limit: {unlimited: Y}
          - key: trial
            shadow_mode: y
            rate_limit: {unit: minute, requests_per_unit: 10}
            metadata: {premium: y, tiers: {y: gold}}
        """;

    EnvoyConfig config =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(List.of(new ConfigFile("b.yaml", yaml)));

    DescriptorLevel root = config.domain("d").orElseThrow().root();
    assertThat(root.exact("internal", "").orElseThrow().rule().orElseThrow().unlimited()).isTrue();
    DescriptorNode trial = root.exact("trial", "").orElseThrow();
    assertThat(trial.shadowMode()).isTrue();
    assertThat(trial.metadata().get("premium")).isEqualTo(Boolean.TRUE);
    assertThat(trial.metadata().get("tiers")).isEqualTo(Map.of("true", "gold"));
  }

  @ParameterizedTest(name = "shadow_mode: {0}")
  @CsvSource({
    "y, true", "Y, true", "yes, true", "Yes, true", "YES, true",
    "true, true", "True, true", "TRUE, true", "on, true", "On, true", "ON, true",
    "n, false", "N, false", "no, false", "No, false", "NO, false",
    "false, false", "False, false", "FALSE, false", "off, false", "Off, false", "OFF, false"
  })
  void compile_everyBooleanSpellingOfYamlV2_readAsThatBoolean(String written, boolean expected)
      throws Exception {
    String yaml =
        "domain: d\ndescriptors:\n  - key: a\n    shadow_mode: "
            + written
            + "\n    rate_limit: {unit: second, requests_per_unit: 1}\n";

    EnvoyConfig config =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(List.of(new ConfigFile("b.yaml", yaml)));

    assertThat(config.domain("d").orElseThrow().root().exact("a", "").orElseThrow().shadowMode())
        .isEqualTo(expected);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({
    "100", "0144", "0o144", "0O144", "0x64", "0X64", "0b1100100", "0B1100100", "+0o144",
    "0o1_44", "0X6_4", "0B110_0100"
  })
  void compile_integerInEveryFormOfYamlV2_readAsThatNumber(String written) throws Exception {
    String yaml =
        "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: "
            + written
            + ", algorithm: leaky_bucket, burst: "
            + written
            + ", unit_multiplier: "
            + written
            + "}\n";

    EnvoyConfig config =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(List.of(new ConfigFile("i.yaml", yaml)));

    RateLimitRule rule =
        config.domain("d").orElseThrow().root().exact("a", "").orElseThrow().rule().orElseThrow();
    assertThat(rule.requestsPerUnit()).isEqualTo(100);
    assertThat(rule.burst()).isEqualTo(100);
    assertThat(rule.unitMultiplier()).isEqualTo(100);
  }

  @Test
  void compile_descriptorKeyAndValueYAndN_matchTheTextAsWritten() throws Exception {
    String yaml =
        """
        domain: d
        descriptors:
          - key: y
            value: n
            descriptors:
              - key: Y
                value: N
                rate_limit: {unit: second, requests_per_unit: 1}
        """;

    EnvoyConfig config =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(List.of(new ConfigFile("k.yaml", yaml)));

    DescriptorNode outer = config.domain("d").orElseThrow().root().exact("y", "n").orElseThrow();
    assertThat(outer.children().exact("Y", "N")).isPresent();
  }
}
