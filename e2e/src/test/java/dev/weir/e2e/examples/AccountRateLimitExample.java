package dev.weir.e2e.examples;

import dev.weir.core.RateLimiter;
import dev.weir.core.Weir;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A service that allows each account 100 requests per second, whichever of its instances a request
 * reaches: every instance embeds a Weir cluster member, and the members share one counter per
 * account.
 *
 * <p>Run {@link #main} to start two instances in one JVM and send 150 requests of one account to
 * them in turn: 100 are allowed.
 */
public final class AccountRateLimitExample implements AutoCloseable {

  /** Requests each account may make per window. */
  public static final long REQUESTS_PER_SECOND = 100;

  private final RateLimiter limiter;

  /**
   * Starts an instance whose member listens on {@code self} and finds the others at {@code members}
   * (every instance's address, {@code self} included); the members prove their membership to each
   * other with {@code secret}, the same on every instance (16 or more characters).
   */
  public AccountRateLimitExample(String self, List<String> members, String secret)
      throws IOException {
    this(self, members, secret, SystemClock.INSTANCE);
  }

  AccountRateLimitExample(String self, List<String> members, String secret, Clock clock)
      throws IOException {
    this.limiter =
        Weir.builder()
            .advertiseAddress(self)
            .staticPeers(members)
            .peerSecret(secret)
            .clock(clock)
            .start();
  }

  /**
   * Counts one request of {@code accountId} and completes with whether it may proceed: at most 100
   * per one-second window, counted across every instance.
   */
  public CompletableFuture<Boolean> allow(String accountId) {
    RateLimitRequest request =
        RateLimitRequest.builder("requests_per_second", "account:" + accountId)
            .algorithm(Algorithm.FIXED_WINDOW)
            .limit(REQUESTS_PER_SECOND)
            .duration(1000)
            .build();
    return limiter.decide(request).thenApply(AccountRateLimitExample::allowed);
  }

  /**
   * Returns whether this instance's limiter answers for {@code accountId} without error, without
   * counting a request: a readiness probe. Instances started one after another may need a moment
   * before every member reaches every other.
   */
  public boolean ready(String accountId) {
    RateLimitRequest probe =
        RateLimitRequest.builder("requests_per_second", "account:" + accountId)
            .algorithm(Algorithm.FIXED_WINDOW)
            .hits(0)
            .limit(REQUESTS_PER_SECOND)
            .duration(1000)
            .build();
    return !limiter.decide(probe).join().isError();
  }

  // A service could fail open here instead: let the request through when the limiter cannot answer.
  private static boolean allowed(RateLimitResponse response) {
    if (response.isError()) {
      throw new IllegalStateException("rate limit check failed: " + response.error());
    }
    return response.status() == Status.UNDER_LIMIT;
  }

  RateLimiter limiter() {
    return limiter;
  }

  /** Leaves the cluster, handing this instance's counters to the other instances. */
  @Override
  public void close() {
    limiter.close();
  }

  /** Starts two instances and sends 150 requests of one account to them in turn. */
  public static void main(String[] args) throws Exception {
    String first = "127.0.0.1:" + freePort();
    String second = "127.0.0.1:" + freePort();
    List<String> members = List.of(first, second);
    String secret = java.util.UUID.randomUUID().toString();
    try (AccountRateLimitExample a = new AccountRateLimitExample(first, members, secret);
        AccountRateLimitExample b = new AccountRateLimitExample(second, members, secret)) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (!a.ready("12345") || !b.ready("12345")) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("the two instances did not reach each other in 30 s");
        }
        Thread.sleep(50);
      }
      int allowed = 0;
      for (int i = 0; i < 150; i++) {
        AccountRateLimitExample instance = i % 2 == 0 ? a : b;
        if (instance.allow("12345").join()) {
          allowed++;
        }
      }
      System.out.println(allowed + " of 150 requests allowed");
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }
}
