package dev.weir.envoy.match;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DescriptorLevel;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class DescriptorMatcherTest {

  private static final String YAML =
      """
      domain: t
      descriptors:
        - key: k
          value: v
          rate_limit: {unit: second, requests_per_unit: 1, name: exact}
        - key: k
          value: "v*"
          rate_limit: {unit: second, requests_per_unit: 2, name: prefix}
        - key: k
          value: "*x*y"
          rate_limit: {unit: second, requests_per_unit: 3, name: middle}
        - key: k
          rate_limit: {unit: second, requests_per_unit: 4, name: default}
        - key: parent
          value: p
          descriptors:
            - key: child
              rate_limit: {unit: minute, requests_per_unit: 5, name: p-child}
        - key: parent
          descriptors:
            - key: other
              rate_limit: {unit: minute, requests_per_unit: 6, name: any-other}
        - key: group
          descriptors:
            - key: leaf
              value: l
              rate_limit: {unit: hour, requests_per_unit: 7, name: leaf}
        - key: wild
          value: "foo*"
          rate_limit: {unit: second, requests_per_unit: 8, name: wild}
        - key: whitelisted
        - key: any
          value: "*"
          rate_limit: {unit: second, requests_per_unit: 9, name: any-value}
        - key: any
          rate_limit: {unit: second, requests_per_unit: 10, name: any-default}
      """;

  private static final DescriptorLevel ROOT = load();

  private static DescriptorLevel load() {
    try {
      return new ConfigLoader(ConfigLoadOptions.DEFAULTS)
          .compile(List.of(new ConfigFile("match.yaml", YAML)))
          .domain("t")
          .orElseThrow()
          .root();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static Stream<Arguments> table() {
    return Stream.of(
        Arguments.of("k=v", "exact", "EXACT"),
        Arguments.of("k=vv", "prefix", "WILDCARD"),
        Arguments.of("k=axby", "middle", "WILDCARD"),
        Arguments.of("k=zzz", "default", "KEY_ONLY"),
        Arguments.of("k=", "default", "KEY_ONLY"),
        Arguments.of("any=", "any-value", "WILDCARD"),
        Arguments.of("any=x", "any-value", "WILDCARD"),
        Arguments.of("k=v,extra=1", null, null),
        Arguments.of("parent=p,child=c", "p-child", "KEY_ONLY"),
        Arguments.of("parent=p,other=o", null, null),
        Arguments.of("parent=q,other=o", "any-other", "KEY_ONLY"),
        Arguments.of("parent=p", null, null),
        Arguments.of("group=g", null, null),
        Arguments.of("group=g,leaf=l", "leaf", "EXACT"),
        Arguments.of("group=g,leaf=m", null, null),
        Arguments.of("wild_foo=bar", null, null),
        Arguments.of("wild=foobar", "wild", "WILDCARD"),
        Arguments.of("wild=fo", null, null),
        Arguments.of("whitelisted=x", null, null),
        Arguments.of("unknown=x", null, null),
        Arguments.of("", null, null));
  }

  @ParameterizedTest(name = "[{0}] -> {1}")
  @MethodSource("table")
  void match_entries_findsTheReferenceRule(String entries, String rule, String lastKind) {
    Optional<Match> match = DescriptorMatcher.match(ROOT, entries(entries));

    if (rule == null) {
      assertThat(match).isEmpty();
    } else {
      assertThat(match).isPresent();
      assertThat(match.get().rule().name()).isEqualTo(rule);
      assertThat(match.get().levels()).hasSize(entries(entries).size());
      assertThat(match.get().levels().get(match.get().levels().size() - 1).kind())
          .isEqualTo(MatchKind.valueOf(lastKind));
    }
  }

  private static List<Entry> entries(String text) {
    List<Entry> out = new ArrayList<>();
    if (text.isEmpty()) {
      return out;
    }
    for (String pair : text.split(",")) {
      int eq = pair.indexOf('=');
      out.add(new Entry(pair.substring(0, eq), pair.substring(eq + 1)));
    }
    return out;
  }
}
