package dev.weir.envoy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.model.Algorithm;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Files envoyproxy/ratelimit accepts load: its YAML library is not strict, so a key written twice
 * keeps its last value, and merge keys work; Weir's stricter check survives as a warning.
 */
class YamlMapsTest {

  @TempDir Path dir;

  private Path write(String name, String content) throws Exception {
    return Files.writeString(dir.resolve(name), content);
  }

  private static EnvoyConfig load(Path path) throws DescriptorConfigException {
    return new ConfigLoader(ConfigLoadOptions.DEFAULTS).load(path);
  }

  @Test
  void load_keyWrittenTwice_usesTheLastValueAndWarnsWithTheLine() throws Exception {
    Path file =
        write(
            "twice.yaml",
            "domain: shop\ndomain: shop2\ndescriptors:\n  - key: a\n"
                + "    rate_limit: {unit: minute, requests_per_unit: 1}\n");
    List<String> warnings = new ArrayList<>();

    EnvoyConfig config =
        new ConfigLoader(ConfigLoadOptions.DEFAULTS)
            .compile(new ConfigLoader(ConfigLoadOptions.DEFAULTS).read(file), warnings::add);

    assertThat(config.domains()).containsOnlyKeys("shop2");
    assertThat(warnings)
        .containsExactly(
            file + ": yaml: line 2: key \"domain\" already set in map; the last value is used");
  }

  @Test
  void load_rateLimitWrittenTwice_mergesTheTwoMapsKeyByKey() throws Exception {
    Path file =
        write(
            "rate-limit-twice.yaml",
            "domain: shop\ndescriptors:\n  - key: a\n"
                + "    rate_limit: {unit: minute, requests_per_unit: 1, name: first}\n"
                + "    rate_limit: {requests_per_unit: 7}\n");

    RateLimitRule rule =
        load(file).domain("shop").orElseThrow().root().exact("a", "").orElseThrow().rule().get();

    assertThat(rule.unit()).isEqualTo(Unit.MINUTE);
    assertThat(rule.requestsPerUnit()).isEqualTo(7);
    assertThat(rule.name()).isEqualTo("first");
  }

  @Test
  void load_mergeKeyInDescriptors_appliesTheAnchoredMapWhereItIsWritten() throws Exception {
    Path file =
        write(
            "merge.yaml",
            """
            domain: shop
            descriptors:
              - &per_minute
                key: path
                value: /a
                rate_limit: {unit: minute, requests_per_unit: 10}
              - <<: *per_minute
                value: /b
              - <<: *per_minute
                value: /c
                rate_limit: {unit: hour, requests_per_unit: 3}
            """);

    DescriptorLevel root = load(file).domain("shop").orElseThrow().root();

    assertThat(root.exact("path", "/b").orElseThrow().rule().orElseThrow())
        .isEqualTo(
            new RateLimitRule(10, Unit.MINUTE, false, "", List.of(), Algorithm.FIXED_WINDOW, 0, 0));
    RateLimitRule c = root.exact("path", "/c").orElseThrow().rule().orElseThrow();
    assertThat(c.unit()).isEqualTo(Unit.HOUR);
    assertThat(c.requestsPerUnit()).isEqualTo(3);
  }

  @Test
  void load_mergeOfSeveralMaps_firstListedWins_andAMergeAfterAKeyReplacesIt() throws Exception {
    Path file =
        write(
            "merge-list.yaml",
            """
            domain: shop
            descriptors:
              - key: m
                rate_limit: &minute {unit: minute, requests_per_unit: 1}
              - key: h
                rate_limit: &hour {unit: hour, requests_per_unit: 2, name: hourly}
              - key: a
                rate_limit:
                  <<: [*minute, *hour]
              - key: b
                rate_limit:
                  requests_per_unit: 99
                  <<: *hour
            """);

    DescriptorLevel root = load(file).domain("shop").orElseThrow().root();

    RateLimitRule a = root.exact("a", "").orElseThrow().rule().orElseThrow();
    assertThat(a.unit()).isEqualTo(Unit.MINUTE);
    assertThat(a.requestsPerUnit()).isEqualTo(1);
    assertThat(a.name()).isEqualTo("hourly");
    assertThat(root.exact("b", "").orElseThrow().rule().orElseThrow().requestsPerUnit())
        .isEqualTo(2);
  }

  @Test
  void load_mergeKeyInMetadata_mergesTheMetadata() throws Exception {
    Path file =
        write(
            "merge-metadata.yaml",
            """
            domain: shop
            descriptors:
              - key: a
                metadata: &owner {team: payments}
              - key: b
                metadata: {<<: *owner, tier: gold}
            """);

    assertThat(
            load(file).domain("shop").orElseThrow().root().exact("b", "").orElseThrow().metadata())
        .isEqualTo(Map.of("team", "payments", "tier", "gold"));
  }

  @Test
  void load_mergeOfAScalar_failsNamingTheLine() throws Exception {
    Path file = write("merge-scalar.yaml", "domain: shop\ndescriptors:\n  - <<: 5\n    key: a\n");

    assertThatThrownBy(() -> load(file))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .containsExactly(
                        file
                            + ": error loading config file: yaml: line 3: map merge requires map"
                            + " or sequence of maps as the value"));
  }

  @Test
  void load_mergeKeyOfAnUnknownKey_failsAsUnknownKey() throws Exception {
    Path file =
        write(
            "merge-unknown.yaml",
            "domain: shop\nx: &x {ratelimit: 1}\ndescriptors:\n  - {<<: *x, key: a}\n");

    assertThatThrownBy(() -> load(file))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .containsExactly(
                        file
                            + ": config error, unknown key 'x': in the top-level map at line 2;"
                            + " allowed keys are domain, descriptors"));
  }

  @Test
  void load_fortyMergedAliasesOfOneDescriptor_eachTakesItsRateLimit() throws Exception {
    StringBuilder yaml =
        new StringBuilder(
            "domain: shop\ndescriptors:\n  - &base {key: k0, rate_limit: {unit: second,"
                + " requests_per_unit: 1}}\n");
    for (int i = 1; i < 40; i++) {
      yaml.append("  - {<<: *base, key: k").append(i).append("}\n");
    }
    Path file = write("many-merges.yaml", yaml.toString());

    DescriptorLevel root = load(file).domain("shop").orElseThrow().root();

    assertThat(root.nodes()).hasSize(40);
    for (int i = 0; i < 40; i++) {
      assertThat(root.exact("k" + i, "").orElseThrow().rule().orElseThrow().requestsPerUnit())
          .as("k" + i)
          .isEqualTo(1);
    }
  }

  @Test
  void validate_keyWrittenTwice_passesPlainly_failsStrictlyWithAWarning() throws Exception {
    Path file =
        write(
            "twice.yaml",
            "domain: shop\ndescriptors:\n  - key: a\n    key: b\n"
                + "    rate_limit: {unit: minute, requests_per_unit: 1}\n");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();

    int plain =
        new ConfigValidator(ConfigLoadOptions.DEFAULTS, false, false)
            .run(file, new PrintStream(out), new PrintStream(err));
    int strict =
        new ConfigValidator(ConfigLoadOptions.DEFAULTS, false, true)
            .run(file, new PrintStream(out), new PrintStream(err));

    assertThat(plain).isZero();
    assertThat(strict).isEqualTo(1);
    assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("OK " + file + "\n");
    assertThat(err.toString(StandardCharsets.UTF_8))
        .isEqualTo(
            "warning: "
                + file
                + ": yaml: line 4: key \"key\" already set in map; the last value is used\n");
  }

  @Test
  void resolve_aMapKeyWrittenManyTimes_mergesInOnePassAndBoundsTheWarnings() {
    int times = 80_000;
    StringBuilder doc = new StringBuilder("m:\n");
    for (int i = 0; i < times; i++) {
      doc.append("  k: {a").append(i).append(": 1}\n");
    }
    org.yaml.snakeyaml.nodes.Node root =
        new org.yaml.snakeyaml.Yaml().compose(new java.io.StringReader(doc.toString()));

    // Merging each map into a copy of all the earlier ones took minutes (3.2e9 entries copied).
    YamlMaps.Result result =
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
            java.time.Duration.ofSeconds(30), () -> YamlMaps.resolve(root));

    var document = (org.yaml.snakeyaml.nodes.MappingNode) result.root();
    var m = (org.yaml.snakeyaml.nodes.MappingNode) document.getValue().get(0).getValueNode();
    var k = (org.yaml.snakeyaml.nodes.MappingNode) m.getValue().get(0).getValueNode();
    assertThat(m.getValue().size()).as("keys of m").isEqualTo(1);
    assertThat(k.getValue().size()).as("keys of m.k, every map merged").isEqualTo(times);
    assertThat(result.warnings()).hasSize(YamlMaps.MAX_WARNINGS + 1);
    assertThat(result.warnings().get(YamlMaps.MAX_WARNINGS))
        .isEqualTo(
            "yaml: "
                + (times - 1 - YamlMaps.MAX_WARNINGS)
                + " more keys already set in their maps");
  }
}
