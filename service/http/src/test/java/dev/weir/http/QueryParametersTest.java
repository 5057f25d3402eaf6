package dev.weir.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class QueryParametersTest {

  @Test
  void parse_decodesNamesAndValuesInOrder_repeatedNamesKeepEveryValue() {
    assertThat(QueryParameters.parse("scope=cluster&limit=5&x=a%20b+c&limit=6&flag&&"))
        .containsExactly(
            Map.entry("scope", List.of("cluster")),
            Map.entry("limit", List.of("5", "6")),
            Map.entry("x", List.of("a b c")),
            Map.entry("flag", List.of("")));
  }

  @Test
  void parse_empty_hasNoParameters() {
    assertThat(QueryParameters.parse("")).isEmpty();
  }

  @Test
  void parse_badPercentEncoding_refused() {
    assertThatThrownBy(() -> QueryParameters.parse("limit=%zz"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void routeDispatcher_queryOf_takesWhatFollowsTheQuestionMarkUpToAFragment() {
    assertThat(RouteDispatcher.queryOf("/v1/TopLimited")).isEmpty();
    assertThat(RouteDispatcher.queryOf("/v1/TopLimited?limit=2")).isEqualTo("limit=2");
    assertThat(RouteDispatcher.queryOf("/v1/TopLimited?limit=2#top")).isEqualTo("limit=2");
  }
}
