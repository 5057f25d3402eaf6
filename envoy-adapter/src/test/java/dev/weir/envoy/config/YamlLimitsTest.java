package dev.weir.envoy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Files built to exhaust a node's stack or heap are refused quickly, with an error naming the file
 * and the limit, while ordinary files, aliases included, keep loading.
 */
class YamlLimitsTest {

  private static final Duration QUICKLY = Duration.ofSeconds(10);

  private static final String EXPANSION_LIMIT =
      "aliases expand the document by more than 100000 nodes, the limit per file";

  private static final String NESTING_LIMIT =
      "aliases nest maps and lists more than 50 levels deep, the limit per file: ";

  @TempDir Path dir;

  private Path write(String name, String content) throws Exception {
    return Files.writeString(dir.resolve(name), content);
  }

  private static DescriptorConfigException refusal(Path path) {
    return refusal(path, ConfigLoadOptions.DEFAULTS);
  }

  private static DescriptorConfigException refusal(Path path, ConfigLoadOptions options) {
    return assertTimeoutPreemptively(
        QUICKLY,
        () -> {
          try {
            new ConfigLoader(options).load(path);
          } catch (DescriptorConfigException e) {
            return e;
          }
          throw new AssertionError(path + " loaded");
        });
  }

  /** Asserts that loading {@code file} is refused with the one error {@code loadError} about it. */
  private static void assertLoadError(Path file, String loadError) {
    assertThat(refusal(file).errors())
        .containsExactly(file + ": error loading config file: " + loadError);
  }

  /**
   * A chain of {@code levels} lists, each holding two aliases of the one before: {@code 2 * levels}
   * aliases, {@code 2^levels} leaves when expanded.
   */
  static String doublingBomb(int levels, int baseItems) {
    StringBuilder yaml =
        new StringBuilder("domain: bomb\ndescriptors:\n  - key: k\n    metadata:\n");
    yaml.append("      l0: &l0 [");
    for (int i = 0; i < baseItems; i++) {
      yaml.append(i == 0 ? "" : ",").append("x");
    }
    yaml.append("]\n");
    for (int i = 1; i <= levels; i++) {
      yaml.append("      l").append(i).append(": &l").append(i);
      yaml.append(" [*l").append(i - 1).append(", *l").append(i - 1).append("]\n");
    }
    return yaml.toString();
  }

  @Test
  void load_recursiveAlias_refusedNamingFileAndLine() throws Exception {
    Path file = write("recursive.yaml", "domain: a\ndescriptors: &d [{key: a, descriptors: *d}]\n");

    assertLoadError(file, "recursive alias: the list at line 2 contains itself");
  }

  @Test
  void load_recursiveAliasInMetadata_refused() throws Exception {
    Path file =
        write(
            "recursive-metadata.yaml",
            "domain: a\ndescriptors:\n  - key: k\n    metadata: &m {self: *m}\n");

    assertLoadError(file, "recursive alias: the map at line 4 contains itself");
  }

  @Test
  void load_aliasBombOfThreeKilobytes_refusedByTheExpansionLimit() throws Exception {
    String bomb = doublingBomb(24, 60);
    Path file = write("bomb.yaml", bomb);

    assertThat(bomb.length()).isBetween(700, 3 * 1024);
    assertLoadError(file, EXPANSION_LIMIT);
  }

  /**
   * {@code links} lists in a {@code metadata} map, each nesting {@code levels} lists around an alias
   * of the one before: written {@code levels + 4} levels deep, {@code links * levels + 4} expanded.
   */
  static String nestingChain(int links, int levels) {
    StringBuilder yaml = new StringBuilder("domain: d\ndescriptors:\n  - key: m\n    metadata:\n");
    for (int i = 0; i < links; i++) {
      yaml.append("      l").append(i).append(": &l").append(i).append(' ');
      yaml.append("[".repeat(levels)).append(i == 0 ? "x" : "*l" + (i - 1));
      yaml.append("]".repeat(levels)).append('\n');
    }
    return yaml.toString();
  }

  @Test
  void load_aliasesNestingDeeperThanTheLimit_refusedByTheNestingLimit() throws Exception {
    Path file = write("nested.yaml", nestingChain(3, 20));

    assertLoadError(file, NESTING_LIMIT + "an alias to the list at line 6 reaches level 64");
  }

  /**
   * A rule whose {@code metadata} (level 4) holds {@code base}, the anchored map {@code m}, and a
   * chain of maps down to level 50, the innermost holding the merge key {@code <<: merge} and
   * nothing else.
   */
  static String mergeAtLevelFifty(String m, String merge) {
    return "domain: d\ndescriptors:\n  - key: k\n    metadata:\n      base: &m "
        + m
        + "\n      other: &o {c: 2}\n      n: "
        + "{n: ".repeat(45)
        + "{<<: "
        + merge
        + "}"
        + "}".repeat(45)
        + "\n";
  }

  @Test
  void load_mergeKeyInAMapAtTheFiftiethLevel_itsEntriesCountAtThatLevelAndTheFileLoads()
      throws Exception {
    Path flat = write("flat.yaml", mergeAtLevelFifty("{a: 1}", "*m"));
    Path list = write("list.yaml", mergeAtLevelFifty("{a: 1}", "[*m, *o]"));

    for (Path file : new Path[] {flat, list}) {
      EnvoyConfig config =
          assertTimeoutPreemptively(
              QUICKLY, () -> new ConfigLoader(ConfigLoadOptions.DEFAULTS).load(file));
      assertThat(config.domain("d")).as(file.toString()).isPresent();
    }
  }

  @Test
  void load_mergeKeyAtTheFiftiethLevelOfAMapHoldingAMap_refusedAtLevelFiftyOne() throws Exception {
    Path nested = write("nested.yaml", mergeAtLevelFifty("{a: {b: 1}}", "*m"));
    Path list = write("list.yaml", mergeAtLevelFifty("{a: {b: 1}}", "[*o, *m]"));

    for (Path file : new Path[] {nested, list}) {
      assertLoadError(file, NESTING_LIMIT + "an alias to the map at line 5 reaches level 51");
    }
  }

  /**
   * A rule whose {@code metadata} anchors the map {@code a}, the list {@code l} of {@code items}
   * aliases to it, and a list of {@code maps} maps each merging {@code *l}: under a megabyte, and
   * {@code items * maps} merged maps when expanded.
   */
  static String mergedListBomb(int items, int maps) {
    StringBuilder yaml =
        new StringBuilder("domain: d\ndescriptors:\n  - key: k\n    metadata:\n");
    yaml.append("      a: &a {x: 1}\n      l: &l [");
    for (int i = 0; i < items; i++) {
      yaml.append(i == 0 ? "*a" : ",*a");
    }
    yaml.append("]\n      m: [");
    for (int i = 0; i < maps; i++) {
      yaml.append(i == 0 ? "{<<: *l}" : ",{<<: *l}");
    }
    return yaml.append("]\n").toString();
  }

  @Test
  void load_manyMapsMergingOneLongAliasedList_refusedQuicklyByTheExpansionLimit()
      throws Exception {
    String bomb = mergedListBomb(170_000, 55_000);
    Path file = write("merged-list-bomb.yaml", bomb);

    assertThat(bomb.length()).isLessThan(1024 * 1024);
    assertLoadError(file, EXPANSION_LIMIT);
  }

  @Test
  void load_mergedListReusedAtTheFiftiethLevelOfAMapHoldingAMap_refusedAtLevelFiftyOne()
      throws Exception {
    String yaml =
        "domain: d\ndescriptors:\n  - key: k\n    metadata:\n      base: &m {a: {b: 1}}\n"
            + "      other: &o {c: 2}\n      shallow: {<<: &l [*o, *m]}\n      n: "
            + "{n: ".repeat(45)
            + "{<<: *l}"
            + "}".repeat(45)
            + "\n";
    Path file = write("reused.yaml", yaml);

    assertLoadError(file, NESTING_LIMIT + "an alias to the map at line 5 reaches level 51");
  }

  @Test
  void load_aliasesNestingFifteenHundredLevels_refusedByTheNestingLimit() throws Exception {
    String yaml = nestingChain(35, 44);
    Path file = write("nested.yaml", yaml);

    assertThat(yaml.length()).isLessThan(4 * 1024);
    assertLoadError(file, NESTING_LIMIT + "an alias to the list at line 5 reaches level 92");
  }

  @Test
  void load_fortyRulesSharingOneAnchoredRateLimit_eachHasItsLimit() throws Exception {
    StringBuilder yaml =
        new StringBuilder(
            "domain: d\ndescriptors:\n  - key: k0\n"
                + "    rate_limit: &std {unit: minute, requests_per_unit: 10}\n");
    for (int i = 1; i < 40; i++) {
      yaml.append("  - key: k").append(i).append("\n    rate_limit: *std\n");
    }
    Path file = write("shared.yaml", yaml.toString());

    EnvoyConfig config = new ConfigLoader(ConfigLoadOptions.DEFAULTS).load(file);

    DescriptorLevel root = config.domain("d").orElseThrow().root();
    assertThat(root.nodes()).hasSize(40);
    for (int i = 0; i < 40; i++) {
      RateLimitRule rule = root.exact("k" + i, "").orElseThrow().rule().orElseThrow();
      assertThat(rule.requestsPerUnit()).as("k" + i).isEqualTo(10);
      assertThat(rule.unit()).as("k" + i).isEqualTo(Unit.MINUTE);
    }
  }

  @Test
  void load_aliasBombWithinTheAliasCount_refusedByTheExpansionLimit() throws Exception {
    Path file = write("bomb.yaml", doublingBomb(8, 1000));

    assertLoadError(file, EXPANSION_LIMIT);
  }

  @Test
  void load_nestingDeeperThanTheLimit_refused() throws Exception {
    Path file =
        write(
            "deep.yaml",
            "domain: a\ndescriptors:\n  - key: k\n    metadata: {m: "
                + "[".repeat(60)
                + "]".repeat(60)
                + "}\n");

    assertThat(refusal(file).errors())
        .singleElement()
        .asString()
        .startsWith(file + ": error loading config file: ")
        .contains(
            "Nesting Depth exceeded max 50: the list at line 4 (descriptor k) reaches level 51");
  }

  @Test
  void load_descriptorsNestedPastTheLimit_refusedNamingTheLineAndLevel() throws Exception {
    StringBuilder yaml = new StringBuilder("domain: a\ndescriptors:\n");
    String indent = "";
    for (int level = 0; level < 30; level++) {
      yaml.append(indent).append("- key: k").append(level).append('\n');
      yaml.append(indent).append("  descriptors:\n");
      indent += "  ";
    }
    yaml.append(indent).append("- key: last\n");
    Path file = write("deep.yaml", yaml.toString());

    assertThat(refusal(file).errors())
        .containsExactly(
            file
                + ": error loading config file: Nesting Depth exceeded max 50: the map at line 51"
                + " (descriptor k24) reaches level 51; allowed are 50 levels of maps and lists per"
                + " file, 24 levels of descriptors");
  }

  @Test
  void load_fileOverTheSizeLimit_refusedBeforeParsing() throws Exception {
    Path file = write("big.yaml", "domain: a\n#" + "x".repeat(ConfigLimits.DEFAULT_MAX_FILE_BYTES));

    assertThat(refusal(file).errors())
        .containsExactly(
            file
                + ": config file is "
                + Files.size(file)
                + " bytes, over the limit of 1048576 bytes per file"
                + " (WEIR_ENVOY_CONFIG_MAX_FILE_SIZE); it was not parsed");
  }

  @Test
  void load_filesOverTheTotalLimit_refusedNamingTheFileThatPassedIt() throws Exception {
    String padding = "#" + "x".repeat(2100) + "\n";
    Path a = write("a.yaml", "domain: a\n" + padding);
    Path b = write("b.yaml", "domain: b\n" + padding);
    long total = Files.size(a) + Files.size(b);
    ConfigLoadOptions options =
        new ConfigLoadOptions(
            false, dev.weir.core.model.Algorithm.FIXED_WINDOW, new ConfigLimits(4096, 4096));

    assertThatThrownBy(() -> new ConfigLoader(options).load(dir))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .containsExactly(
                        b
                            + ": the config files up to this one hold "
                            + total
                            + " bytes, over the limit of"
                            + " 4096 bytes for all files together"
                            + " (WEIR_ENVOY_CONFIG_MAX_TOTAL_SIZE); none was parsed"));
  }

  @Test
  void parse_textOverTheCodePointLimit_refused() {
    ConfigLimits limits = new ConfigLimits(1024, 1024);

    assertThatThrownBy(
            () -> YamlConfigParser.parse("f.yaml", "domain: " + "a".repeat(2000), limits))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .singleElement()
                    .asString()
                    .startsWith("f.yaml: error loading config file: ")
                    .contains("exceeds the limit: 1024 code points"));
  }

  /**
   * A rule with key {@code keyLength} characters long and {@code children} short rules nested
   * under it: each child's path and counter name repeat the long key.
   */
  static String longKeyWithChildren(int keyLength, int children) {
    StringBuilder yaml = new StringBuilder("domain: d\ndescriptors:\n  - key: ");
    yaml.append("k".repeat(keyLength)).append("\n    descriptors:\n");
    for (int i = 0; i < children; i++) {
      yaml.append("      - key: c").append(i).append('\n');
    }
    return yaml.toString();
  }

  @Test
  void load_longKeyOverManyChildren_refusedByTheCompiledTextLimit() throws Exception {
    String yaml = longKeyWithChildren(20_000, 1_000);
    Path file = write("long-key.yaml", yaml);

    assertThat(yaml.length()).isBetween(30_000, 50_000);
    assertThat(refusal(file).errors())
        .singleElement()
        .asString()
        .startsWith(file + ": rule 'd." + "k".repeat(60))
        .containsPattern("\\.\\.\\.' \\(2000\\d characters\\) at line \\d+ ")
        .contains(
            " over the limit of 33554432 characters for one load (twice"
                + " WEIR_ENVOY_CONFIG_MAX_TOTAL_SIZE)")
        .hasSizeLessThan(1024);
  }

  @Test
  void load_longKeyOverFewerChildren_loadsWithinTheCompiledTextLimit() throws Exception {
    Path file = write("long-key.yaml", longKeyWithChildren(20_000, 500));

    EnvoyConfig config = new ConfigLoader(ConfigLoadOptions.DEFAULTS).load(file);

    assertThat(config.domain("d").orElseThrow().root().nodes().get(0).children().nodes())
        .hasSize(500);
  }

  @Test
  void load_anchoredLongValueOfManySiblings_refusedByTheCompiledTextLimit() throws Exception {
    StringBuilder yaml = new StringBuilder("domain: d\ndescriptors:\n");
    yaml.append("  - {key: s0, value: &v ").append("v".repeat(10_000)).append("}\n");
    for (int i = 1; i < 1_000; i++) {
      yaml.append("  - {key: s").append(i).append(", value: *v}\n");
    }
    Path file = write("anchored.yaml", yaml.toString());
    ConfigLoadOptions options =
        new ConfigLoadOptions(
            false,
            dev.weir.core.model.Algorithm.FIXED_WINDOW,
            new ConfigLimits(ConfigLimits.DEFAULT_MAX_FILE_BYTES, 4L * 1024 * 1024));

    assertThat(yaml.length()).isLessThan(40_000);
    assertThat(refusal(file, options).errors())
        .singleElement()
        .asString()
        .startsWith(file + ": rule 'd.s")
        .contains(" over the limit of 8388608 characters for one load")
        .hasSizeLessThan(1024);
  }

  @Test
  void load_errorShowingAListOfAliasedLongScalars_isShownCut() throws Exception {
    StringBuilder yaml = new StringBuilder("domain: d\ndescriptors: [[&s ");
    yaml.append("s".repeat(20_000));
    yaml.append(", *s".repeat(99_000)).append("]]\n");
    Path file = write("aliased-scalars.yaml", yaml.toString());

    assertThat(yaml.length()).isBetween(400_000, ConfigLimits.DEFAULT_MAX_FILE_BYTES);
    assertThat(refusal(file).errors())
        .singleElement()
        .asString()
        .isEqualTo(
            file
                + ": config error, yaml file contains list of type other than map: ["
                + "s".repeat(199)
                + "...: item 1 of descriptors in the top-level map at line 2; allowed items are"
                + " descriptors, maps such as {key: k, value: v}");
  }

  @Test
  void load_aliasReusingARateLimitMap_loads() throws Exception {
    Path file =
        write(
            "reuse.yaml",
            """
            domain: shop
            descriptors:
              - key: a
                rate_limit: &per_minute {unit: minute, requests_per_unit: 10}
              - key: b
                rate_limit: *per_minute
            """);

    EnvoyConfig config = new ConfigLoader(ConfigLoadOptions.DEFAULTS).load(file);

    assertThat(config.domain("shop").orElseThrow().root().exact("b", "").orElseThrow().rule())
        .hasValueSatisfying(rule -> assertThat(rule.requestsPerUnit()).isEqualTo(10));
  }
}
