package dev.weir.e2e.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.AwaitForwarding;
import dev.weir.core.testkit.FakeClock;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class AccountRateLimitExampleTest {

  private final FakeClock clock = new FakeClock();
  private AccountRateLimitExample first;
  private AccountRateLimitExample second;

  private static String freeAddress() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return "127.0.0.1:" + socket.getLocalPort();
    }
  }

  @BeforeEach
  void startTwoInstances() throws Exception {
    String a = freeAddress();
    String b = freeAddress();
    first = new AccountRateLimitExample(a, List.of(a, b), "example-test-secret", clock);
    second = new AccountRateLimitExample(b, List.of(a, b), "example-test-secret", clock);
    AwaitForwarding.on(List.of(first.limiter(), second.limiter()));
  }

  @AfterEach
  void stop() {
    second.close();
    first.close();
  }

  private long allowedOf(int requests, String account) {
    return IntStream.range(0, requests)
        .mapToObj(i -> (i % 2 == 0 ? first : second).allow(account).join())
        .filter(allowed -> allowed)
        .count();
  }

  @Test
  void allow_oneAccountOnBothInstances_admits100PerSecondInAll() {
    assertThat(allowedOf(150, "12345")).isEqualTo(100);
    assertThat(allowedOf(10, "12345")).isZero();
  }

  @Test
  void allow_nextSecond_admitsAgain() {
    allowedOf(150, "12345");

    clock.advance(Duration.ofSeconds(1));

    assertThat(allowedOf(150, "12345")).isEqualTo(100);
  }

  @Test
  void allow_twoAccounts_areCountedApart() {
    assertThat(allowedOf(100, "alice")).isEqualTo(100);
    assertThat(allowedOf(100, "bob")).isEqualTo(100);
    assertThat(allowedOf(1, "alice")).isZero();
  }

  @Test
  void main_twoInstancesInOneJvm_reportsWhatWasAllowed() throws Exception {
    PrintStream original = System.out;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    try {
      AccountRateLimitExample.main(new String[0]);
    } finally {
      System.setOut(original);
    }

    assertThat(out.toString(StandardCharsets.UTF_8))
        .containsPattern("\\d+ of 150 requests allowed");
  }
}
