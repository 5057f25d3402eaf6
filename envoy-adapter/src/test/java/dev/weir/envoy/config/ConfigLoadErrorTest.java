package dev.weir.envoy.config;

import static org.assertj.core.api.Assertions.as;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.model.Algorithm;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

class ConfigLoadErrorTest {

  private static final String TOP_KEYS = "domain, descriptors";

  private static final String DESCRIPTOR_KEYS =
      "key, value, rate_limit, rate_limits, descriptors, shadow_mode, quota_mode, detailed_metric,"
          + " value_to_metric, share_threshold, metadata";

  private static final String RATE_LIMIT_KEYS =
      "unit, requests_per_unit, unlimited, name, replaces, algorithm, burst, behavior,"
          + " unit_multiplier, calendar, time_zone";

  static Stream<Arguments> fileErrors() {
    return Stream.of(
        Arguments.of("empty-domain.yaml", "config file cannot have empty domain"),
        Arguments.of(
            "empty-key.yaml",
            "descriptor has empty key: the descriptor at line 5 in 'shop.a' (value 'b') has no key;"
                + " allowed keys are non-empty strings"),
        Arguments.of(
            "duplicate-key.yaml",
            "duplicate descriptor composite key 'shop.path_/api.method_GET': the descriptor at"
                + " line 9 repeats key 'method' with value 'GET' of the descriptor at line 6;"
                + " allowed is one descriptor per key and value at each level (several limits"
                + " on one descriptor go in its rate_limits)"),
        Arguments.of(
            "bad-unit.yaml",
            "invalid rate limit unit 'fortnight': in rate_limit of 'shop.a' at line 4; allowed"
                + " units are second, minute, hour, day, week, month, year (in any case)"),
        Arguments.of(
            "missing-unit.yaml",
            "invalid rate limit unit '': rate_limit of 'shop.a' at line 4 has no unit; allowed"
                + " units are second, minute, hour, day, week, month, year (in any case), or none with unlimited: true"),
        Arguments.of(
            "unlimited-with-unit.yaml",
            "should not specify rate limit unit when unlimited: unit 'Second' in rate_limit of"
                + " 'shop.a' at line 4; an unlimited rule has no unit, so remove unit or unlimited"),
        Arguments.of(
            "empty-replaces.yaml",
            "should not have an empty replaces entry: replaces of rate_limit 'first' of 'shop.a'"
                + " at line 4 has an entry without a name; allowed are names of other rules"),
        Arguments.of(
            "self-replaces.yaml",
            "replaces should not contain name of same descriptor: rate_limit 'first' of 'shop.a'"
                + " at line 4 replaces its own name 'first'; allowed are names of other rules"),
        Arguments.of(
            "share-threshold-without-wildcard.yaml",
            "share_threshold can only be used with wildcard values (containing '*'), but found key"
                + " 'files_report': the descriptor 'shop.files_report' at line 3 has"
                + " share_threshold: true, but its value 'report' has no '*'; allowed is"
                + " share_threshold: true on a wildcard value such as 'report*', or"
                + " share_threshold: false"),
        Arguments.of(
            "share-threshold-without-value.yaml",
            "share_threshold can only be used with wildcard values (containing '*'), but found key"
                + " 'files': the descriptor 'shop.files' at line 3 has share_threshold: true, but"
                + " no value; allowed is share_threshold: true on a wildcard value such as"
                + " 'prefix*', or share_threshold: false"),
        Arguments.of(
            "unknown-key.yaml",
            "config error, unknown key 'ratelimit': in descriptor 'shop.a' at line 4; allowed keys"
                + " are "
                + DESCRIPTOR_KEYS),
        Arguments.of(
            "non-string-key.yaml",
            "config error, key is not of type string: 123: in descriptor 'shop.a' at line 4, YAML"
                + " reads the key '123' as a whole number; allowed keys are "
                + DESCRIPTOR_KEYS),
        Arguments.of(
            "list-of-non-map.yaml",
            "config error, yaml file contains list of type other than map: other: item 1 of"
                + " replaces in rate_limit of 'shop.a' at line 8; allowed items are maps such as"
                + " {name: <rule name>}"),
        Arguments.of(
            "float-leaf.yaml",
            "error checking config: invalid requests_per_unit '1.5' in rate_limit of 'shop.a':"
                + " allowed values are whole numbers from 0 to 4294967295"),
        Arguments.of(
            "bad-metadata.yaml", "error parsing metadata: metadata must be a map, found [one two]"),
        Arguments.of(
            "negative-requests-per-unit.yaml",
            "error loading config file: yaml: unmarshal errors: line 4: cannot unmarshal !!int `-1`"
                + " into uint32: invalid requests_per_unit '-1' in rate_limit of 'shop.a': allowed"
                + " values are whole numbers from 0 to 4294967295"),
        Arguments.of(
            "requests-per-unit-over-uint32.yaml",
            "error loading config file: yaml: unmarshal errors: line 4: cannot unmarshal !!int"
                + " `4294967296` into uint32: invalid requests_per_unit '4294967296' in rate_limit of"
                + " 'shop.a': allowed values are whole numbers from 0 to 4294967295"),
        Arguments.of(
            "bool-as-string.yaml",
            "error loading config file: yaml: unmarshal errors: line 4: cannot unmarshal !!str"
                + " `sometimes` into bool: invalid shadow_mode 'sometimes' in descriptor 'shop.a':"
                + " allowed values are true, false"),
        Arguments.of(
            "bad-algorithm.yaml",
            "invalid algorithm 'gcra' in rate_limit of 'shop.a': allowed values are fixed_window,"
                + " token_bucket, leaky_bucket, sliding_window"),
        Arguments.of(
            "bad-burst.yaml",
            "invalid burst 'lots' in rate_limit of 'shop.a': allowed values are integers from 0 to"
                + " 4294967295"),
        Arguments.of(
            "bad-behavior.yaml",
            "invalid behavior 'reset_remaining' in rate_limit of 'shop.a': allowed values are"
                + " global, no_batching, drain_over_limit"),
        Arguments.of(
            "behavior-not-a-list.yaml",
            "invalid behavior 'global' in rate_limit of 'shop.a' at line 4: must be a list of"
                + " global, no_batching, drain_over_limit; write it as [global]"));
  }

  static Stream<Arguments> weirKeysOutsideRateLimit() {
    return Stream.of(
        Arguments.of(
            "weir-key-at-descriptor-level.yaml",
            "config error, unknown key 'algorithm': in descriptor 'shop.a' at line 4; algorithm"
                + " belongs in a rate_limit map or a rate_limits entry; allowed keys are "
                + DESCRIPTOR_KEYS),
        Arguments.of(
            "weir-key-at-top-level.yaml",
            "config error, unknown key 'burst': in the top-level map at line 2; burst belongs in a"
                + " rate_limit map or a rate_limits entry; allowed keys are "
                + TOP_KEYS),
        Arguments.of(
            "weir-key-in-replaces.yaml",
            "config error, unknown key 'behavior': in replaces of rate_limit of 'shop.a' at line"
                + " 7; behavior belongs in a rate_limit map or a rate_limits entry; allowed keys are"
                + " name"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("weirKeysOutsideRateLimit")
  void load_weirExtensionKeyOutsideRateLimit_unknownKeySayingWhereItBelongs(
      String file, String text) {
    Path path = Fixtures.path("errors/" + file);

    assertThatThrownBy(() -> new ConfigLoader(ConfigLoadOptions.DEFAULTS).load(path))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e -> assertThat(e.errors()).containsExactly(path + ": " + text));
  }

  @Test
  void compile_misspelledKeyDeepInAFile_namesTheRuleTheLineAndTheAllowedKeys() {
    String yaml =
        "domain: d\ndescriptors:\n  - key: k\n    value: v\n    descriptors:\n"
            + "      - key: inner\n        rate_limit:\n          unit: second\n"
            + "          requests_per_uint: 10\n";

    assertCompileErrors(
        yaml,
        "t.yaml: config error, unknown key 'requests_per_uint': in rate_limit of 'd.k_v.inner' at"
            + " line 9; allowed keys are "
            + RATE_LIMIT_KEYS);
  }

  @Test
  void compile_unknownKeyInARateLimitsEntry_namesTheEntrysPlace() {
    String yaml =
        "domain: d\ndescriptors:\n  - key: k\n    rate_limits:\n"
            + "      - {unit: second, requests_per_unit: 1, bogus: 2}\n";

    assertCompileErrors(
        yaml,
        "t.yaml: config error, unknown key 'bogus': in rate_limits of 'd.k' at line 5; allowed"
            + " keys are "
            + RATE_LIMIT_KEYS);
  }

  @Test
  void compile_unknownKeyInAMapWhereNoneBelongs_listsTheFormatsKeys() {
    String yaml =
        "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: {minute: 1}\n";

    assertCompileErrors(
        yaml,
        "t.yaml: config error, unknown key 'minute': in the map under unit of rate_limit of 'd.k'"
            + " at line 5; allowed keys are domain, key, value, descriptors, rate_limit, unit,"
            + " requests_per_unit, unlimited, shadow_mode, quota_mode, name, replaces,"
            + " detailed_metric, value_to_metric, share_threshold, metadata");
  }

  @Test
  void compile_descriptorListItemThatIsNotAMap_namesTheItemAndWhatDescriptorsHold() {
    String yaml = "domain: d\ndescriptors:\n  - key: k\n  - other\n";

    assertCompileErrors(
        yaml,
        "t.yaml: config error, yaml file contains list of type other than map: other: item 2 of"
            + " descriptors in the top-level map at line 4; allowed items are descriptors, maps"
            + " such as {key: k, value: v}");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fileErrors")
  void load_badFile_failsWithReferenceWordingPrefixedByFileName(String file, String text) {
    Path path = Fixtures.path("errors/" + file);

    assertThatThrownBy(() -> new ConfigLoader(ConfigLoadOptions.DEFAULTS).load(path))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e -> assertThat(e.errors()).containsExactly(path + ": " + text));
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "requests_per_unit: 2.5 | error checking config: invalid requests_per_unit '2.5' in rate_limit"
            + " of 'demo.user_x.tier': allowed values are whole numbers from 0 to 4294967295",
        "requests_per_unit: 2.0 | error checking config: invalid requests_per_unit '2.0' in rate_limit"
            + " of 'demo.user_x.tier': allowed values are whole numbers from 0 to 4294967295",
        "requests_per_unit: '7' | error loading config file: yaml: unmarshal errors: line 8: cannot"
            + " unmarshal !!str `7` into uint32: invalid requests_per_unit '7' in rate_limit of"
            + " 'demo.user_x.tier': allowed values are whole numbers from 0 to 4294967295 (written in"
            + " quotes, it is a string: write numbers without quotes)",
        "burst: 1.5 | error checking config: invalid burst '1.5' in rate_limit of 'demo.user_x.tier':"
            + " allowed values are whole numbers from 0 to 4294967295",
        "unit_multiplier: 0.5 | error checking config: invalid unit_multiplier '0.5' in rate_limit of"
            + " 'demo.user_x.tier': allowed values are whole numbers from 1",
        "unlimited: 1.0 | error checking config: invalid unlimited '1.0' in rate_limit of"
            + " 'demo.user_x.tier': allowed values are true, false",
        "name: 1.5 | error checking config: invalid name '1.5' in rate_limit of 'demo.user_x.tier':"
            + " YAML reads it as a number with a fraction, not text: write it in quotes ('1.5')",
      })
  void compile_badNumberInRateLimit_referenceTextThenKeyValueDescriptorAndAllowed(
      String line, String text) {
    assertCompileErrors(tierRateLimitWith(line), "t.yaml: " + text);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "unlimited: maybe | error loading config file: yaml: unmarshal errors: line 8: cannot"
            + " unmarshal !!str `maybe` into bool: invalid unlimited 'maybe' in rate_limit of"
            + " 'demo.user_x.tier': allowed values are true, false",
        "unlimited: 'y' | error loading config file: yaml: unmarshal errors: line 8: cannot"
            + " unmarshal !!str `y` into bool: invalid unlimited 'y' in rate_limit of"
            + " 'demo.user_x.tier': allowed values are true, false (written in quotes, it is a"
            + " string: write booleans without quotes)",
        "yES: 1 | config error, unknown key 'yES': in rate_limit of 'demo.user_x.tier' at line 8;"
            + " allowed keys are unit, requests_per_unit, unlimited, name, replaces, algorithm,"
            + " burst, behavior, unit_multiplier, calendar, time_zone",
      })
  void compile_badBooleanInRateLimit_referenceTextThenKeyValueDescriptorAndAllowed(
      String line, String text) {
    assertCompileErrors(tierRateLimitWith(line), "t.yaml: " + text);
  }

  /** A config whose rule for {@code user=x, tier} has {@code line} in its rate_limit. */
  private static String tierRateLimitWith(String line) {
    return "domain: demo\n"
        + "descriptors:\n"
        + "  - key: user\n"
        + "    value: x\n"
        + "    descriptors:\n"
        + "      - key: tier\n"
        + "        rate_limit:\n"
        + "          "
        + line
        + "\n"
        + "          unit: second\n";
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "y | true | a boolean",
        "N | false | a boolean",
        "0x1F | 31 | a whole number",
        "0O17 | 15 | a whole number",
        "1.5 | 1.5 | a number with a fraction",
        "~ | <nil> | null",
        "2024-01-02 | | ",
        "[x, y] | [x y] | a list",
        "yES | | "
      })
  void compile_keyYamlV2ReadsAsNoText_notOfTypeStringAsGoPrintsItWithWhatYamlReads(
      String key, String printed, String kind) {
    String yaml = "domain: demo\ndescriptors:\n  - key: a\n    " + key + ": 1\n";

    assertCompileErrors(
        yaml,
        "t.yaml: "
            + (printed == null
                ? "config error, unknown key '"
                    + key
                    + "': in descriptor 'demo.a' at line 4; allowed keys are "
                    + DESCRIPTOR_KEYS
                : "config error, key is not of type string: "
                    + printed
                    + ": in descriptor 'demo.a' at line 4, YAML reads the key '"
                    + (key.startsWith("[") ? printed : key)
                    + "' as "
                    + kind
                    + "; allowed keys are "
                    + DESCRIPTOR_KEYS));
  }

  @Test
  void compile_policyReplacesAnotherPolicyOfItsDescriptor_namesBothPoliciesAndTheLine() {
    String yaml =
        "domain: demo\ndescriptors:\n  - key: ip\n    rate_limits:\n"
            + "      - {unit: second, requests_per_unit: 5, name: burst}\n"
            + "      - {unit: day, requests_per_unit: 900, name: daily, replaces: [{name: burst}]}\n";

    assertCompileErrors(
        yaml,
        "t.yaml: replaces should not contain name of same descriptor: rate_limit"
            + " 'daily' of 'demo.ip' at line 6 replaces 'burst', a policy of the"
            + " same descriptor; allowed are names of rules of other descriptors");
  }

  @Test
  void compile_topLevelDescriptorWithoutKey_namesTheDomainAndTheLine() {
    String yaml =
        "domain: demo\ndescriptors:\n  - key: a\n  - key: ''\n"
            + "    rate_limit: {unit: second, requests_per_unit: 1}\n";

    assertCompileErrors(
        yaml,
        "t.yaml: descriptor has empty key: the descriptor at line 4 in 'demo' has"
            + " no key; allowed keys are non-empty strings");
  }

  @Test
  void compile_badUnitInRateLimitsEntry_namesTheEntrysLine() {
    String yaml =
        "domain: demo\ndescriptors:\n  - key: ip\n    rate_limits:\n"
            + "      - {unit: second, requests_per_unit: 5}\n"
            + "      - unit: minutes\n"
            + "        requests_per_unit: 9\n";

    assertCompileErrors(
        yaml,
        "t.yaml: invalid rate limit unit 'minutes': in rate_limit of 'demo.ip' at"
            + " line 6; allowed units are second, minute, hour, day, week, month,"
            + " year (in any case)");
  }

  @Test
  void compile_metadataKeyThatIsAList_namesTheKeyItsLineAndTheAllowedKeys() {
    String yaml =
        "domain: demo\ndescriptors:\n  - key: a\n    metadata:\n      ok: 1\n"
            + "      [x, y]: 2\n";

    assertCompileErrors(
        yaml,
        "t.yaml: error parsing metadata: key is not of type string: [x y] at line"
            + " 6: allowed keys are strings, numbers, booleans and null");
  }

  @Test
  void compile_floatDescriptorValue_namesDescriptorAndSaysToQuoteIt() {
    String yaml =
        "domain: demo\ndescriptors:\n  - key: version\n    value: 1.5\n"
            + "    shadow_mode: true\n";

    assertCompileErrors(
        yaml,
        "t.yaml: error checking config: invalid value '1.5' in descriptor"
            + " 'demo.version_1.5': YAML reads it as a number with a fraction, not"
            + " text: write it in quotes ('1.5')");
  }

  /** Found by {@code ConfigLoaderFuzzTest}: a local tag made the message StringIndexOutOfBounds. */
  @Test
  void compile_localTag_unmarshalErrorNamingTheTagAsYamlV2Does() {
    ConfigFile file = new ConfigFile("local-tag.yaml", "!b ");

    assertThatThrownBy(() -> new ConfigLoader(ConfigLoadOptions.DEFAULTS).compile(List.of(file)))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .singleElement(as(InstanceOfAssertFactories.STRING))
                    .startsWith(
                        "local-tag.yaml: error loading config file: yaml: unmarshal errors: line 1:"
                            + " cannot unmarshal !b ``"));
  }

  /** Found by {@code ConfigLoaderFuzzTest}: SnakeYAML refused the tag with IllegalArgumentException. */
  @Test
  void compile_escapedTagDecodingToASpace_loadErrorNamingTheFile() {
    ConfigFile file = new ConfigFile("escaped-tag.yaml", "!%b");

    assertThatThrownBy(() -> new ConfigLoader(ConfigLoadOptions.DEFAULTS).compile(List.of(file)))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .singleElement(as(InstanceOfAssertFactories.STRING))
                    .startsWith("escaped-tag.yaml: error loading config file: "));
  }

  @Test
  void load_unparseableYaml_failsWithLoadingErrorAndParserMessage() {
    Path path = Fixtures.path("errors/unparseable.yaml");

    assertThatThrownBy(() -> new ConfigLoader(ConfigLoadOptions.DEFAULTS).load(path))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .singleElement()
                    .asString()
                    .startsWith(path + ": error loading config file: ")
                    .doesNotContain("\n"));
  }

  @Test
  void load_sameDomainInTwoFiles_failsOnTheSecondFile() {
    Path dir = Fixtures.path("errors/duplicate-domain");

    assertThatThrownBy(() -> new ConfigLoader(ConfigLoadOptions.DEFAULTS).load(dir))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .containsExactly(
                        dir.resolve("b.yaml")
                            + ": duplicate domain 'shop' in config file: "
                            + dir.resolve("a.yaml")
                            + " declares it too; allowed is one file per domain, or several"
                            + " whose top-level descriptors are merged, with"
                            + " WEIR_ENVOY_MERGE_DOMAIN_CONFIG=true"));
  }

  @Test
  void compile_secondYamlDocumentOrTrailingSeparator_firstDocumentReadAsEnvoysServiceReadsIt()
      throws DescriptorConfigException {
    String first = "domain: shop\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n";

    for (String tail : List.of("---\n", "---\ndomain: other\n", "---\n: [unclosed\n")) {
      EnvoyConfig config =
          new ConfigLoader(ConfigLoadOptions.DEFAULTS)
              .compile(List.of(new ConfigFile("f.yaml", first + tail)));

      assertThat(config.domain("shop")).as(tail).isPresent();
      assertThat(config.domain("other")).as(tail).isEmpty();
      assertThat(new ConfigLoader(ConfigLoadOptions.DEFAULTS).check(List.of(new ConfigFile("f.yaml", first + tail))).warnings())
          .as(tail)
          .containsExactly(
              "f.yaml: the file holds more than one YAML document (a line '---' after the first);"
                  + " only the first is read");
    }
  }

  @Test
  void load_sameDomainInTwoFilesWithMerge_mergesTopLevelRules() throws DescriptorConfigException {
    Path dir = Fixtures.path("errors/duplicate-domain");

    EnvoyConfig config =
        new ConfigLoader(new ConfigLoadOptions(true, Algorithm.FIXED_WINDOW)).load(dir);

    assertThat(config.domain("shop").orElseThrow().root().nodes())
        .extracting(DescriptorNode::key)
        .containsExactly("a", "b");
  }

  @Test
  void load_sameRuleInTwoMergedFiles_failsWithDuplicateCompositeKey() {
    Path dir = Fixtures.path("errors/merge-duplicate-key");

    assertThatThrownBy(
            () -> new ConfigLoader(new ConfigLoadOptions(true, Algorithm.FIXED_WINDOW)).load(dir))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .containsExactly(
                        dir.resolve("b.yaml")
                            + ": duplicate descriptor composite key 'shop.a': the descriptor at"
                            + " line 3 repeats key 'a' (no value) of the descriptor at "
                            + dir.resolve("a.yaml")
                            + ":3; allowed is one descriptor per key and value at each level"
                            + " (several limits on one descriptor go in its rate_limits)"));
  }

  /** Asserts that compiling {@code yaml} as {@code t.yaml} fails with exactly {@code errors}. */
  private static void assertCompileErrors(String yaml, String... errors) {
    assertThatThrownBy(
            () ->
                new ConfigLoader(ConfigLoadOptions.DEFAULTS)
                    .compile(List.of(new ConfigFile("t.yaml", yaml))))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class, e -> assertThat(e.errors()).containsExactly(errors));
  }
}
