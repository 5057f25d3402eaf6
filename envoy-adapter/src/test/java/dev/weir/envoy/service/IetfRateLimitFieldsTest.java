package dev.weir.envoy.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.envoy.testkit.RateLimitFieldsSyntax;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.util.List;
import java.util.Map;
import org.greenbytes.http.sfv.Parser;
import org.junit.jupiter.api.Test;

class IetfRateLimitFieldsTest {

  private static DescriptorPlan.Policy policy(String name, long limit, long durationMillis) {
    return new DescriptorPlan.Policy(
        name,
        name,
        name,
        limit,
        Unit.SECOND,
        List.of(),
        new RateLimitRequest("n", "k", 1, limit, durationMillis, 0, 0, 0, 0, Map.of()));
  }

  private static String string(String text) {
    return IetfRateLimitFields.string(new StringBuilder(), text).toString();
  }

  @Test
  void string_quotesAndBackslashesEscaped_parsesBackToTheName() {
    String text = "a \"quoted\" \\ name";

    assertThat(string(text)).isEqualTo("\"a \\\"quoted\\\" \\\\ name\"");
    assertThat(Parser.parseItem(string(text)).get()).isEqualTo(text);
  }

  @Test
  void string_outsidePrintableAsciiAndPercent_percentEncodedUtf8() {
    assertThat(string("caf\u00e9\t100%\uD83D\uDE00"))
        .isEqualTo("\"caf%C3%A9%09100%25%F0%9F%98%80\"");
    assertThat(Parser.parseItem(string("\u00e9\u0000\u007f")).get()).isEqualTo("%C3%A9%00%7F");
  }

  @Test
  void policyMember_windowInWholeSecondsRoundedUp_valuesClampedToSfIntegers() {
    assertThat(IetfRateLimitFields.policyMember(policy("per-ip", 10, 60_000)))
        .isEqualTo("\"per-ip\";q=10;w=60");
    assertThat(IetfRateLimitFields.policyMember(policy("p", 1, 1_500))).isEqualTo("\"p\";q=1;w=2");
    String huge = IetfRateLimitFields.policyMember(policy("p", 1, Long.MAX_VALUE));

    assertThat(huge).isEqualTo("\"p\";q=1;w=999999999999999");
    assertThat(RateLimitFieldsSyntax.policy(huge)).hasSize(1);
  }

  @Test
  void syntaxChecker_refusesWhatTheDraftDoesNotAllow() {
    assertThatThrownBy(() -> RateLimitFieldsSyntax.policy("per-ip;q=1")).isInstanceOf(Error.class);
    assertThatThrownBy(() -> RateLimitFieldsSyntax.policy("\"p\";w=1"))
        .hasMessageContaining("no q");
    assertThatThrownBy(() -> RateLimitFieldsSyntax.policy("\"p\";q=1.5"))
        .hasMessageContaining("q is not an Integer");
    assertThatThrownBy(() -> RateLimitFieldsSyntax.limit("\"p\";r=1;x=2"))
        .hasMessageContaining("unknown parameter x");
    assertThatThrownBy(() -> RateLimitFieldsSyntax.limit("\"p\";r=1,"))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
