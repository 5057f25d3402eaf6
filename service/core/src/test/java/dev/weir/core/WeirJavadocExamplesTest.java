package dev.weir.core;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.JavadocExamples;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Runs the examples of {@link Weir}'s Javadoc, which must be this class's code verbatim. */
class WeirJavadocExamplesTest {

  @Test
  void classExample_memberOfTwo_admitsTheRequest() throws Exception {
    String self = "127.0.0.1:" + WeirTest.freePort();
    String other = "127.0.0.1:" + WeirTest.freePort();
    String secret = "a-secret-of-the-two-members";
    try (WeirMember running =
        Weir.builder()
            .advertiseAddress(other)
            .staticPeers(List.of(self, other))
            .peerSecret(secret)
            .start()) {
      assertThat(classExample(self, other, secret, 12345)).isTrue();
    }
  }

  @Test
  void javadoc_examples_areThisClassVerbatim() throws Exception {
    JavadocExamples.assertAllIn(
        Path.of("src/main/java/dev/weir/core/Weir.java"),
        Path.of("src/test/java/dev/weir/core/WeirJavadocExamplesTest.java"));
  }

  private static boolean classExample(String self, String other, String secret, long accountId)
      throws IOException {
    try (RateLimiter limiter =
        Weir.builder()
            .advertiseAddress(self)
            .staticPeers(List.of(self, other))
            .peerSecret(secret)
            .start()) {
      RateLimitRequest request =
          RateLimitRequest.builder("requests_per_sec", "account:" + accountId)
              .limit(100)
              .duration(1000)
              .build();
      RateLimitResponse response = limiter.decide(request).join();
      return response.status() == Status.UNDER_LIMIT;
    }
  }
}
