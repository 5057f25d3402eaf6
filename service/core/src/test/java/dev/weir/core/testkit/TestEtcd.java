package dev.weir.core.testkit;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;

/**
 * The etcd a test class runs against: the one {@code WEIR_TEST_ETCD} names when set (as {@code
 * .ci/run} does), otherwise an {@link EtcdProcess} started for the class when the binary is on the
 * PATH; when neither, the class is skipped with the reason printed.
 */
public final class TestEtcd implements AutoCloseable {

  /** The variable naming a shared etcd's client URL. */
  public static final String VARIABLE = "WEIR_TEST_ETCD";

  private final String endpoint;
  private final EtcdProcess own;

  private TestEtcd(String endpoint, EtcdProcess own) {
    this.endpoint = endpoint;
    this.own = own;
  }

  /**
   * Returns the shared etcd, or starts one; skips {@code testClass} (a JUnit assumption) when there
   * is neither.
   */
  public static TestEtcd forClass(Class<?> testClass) throws IOException, InterruptedException {
    String shared = System.getenv(VARIABLE);
    if (shared != null && !shared.isBlank()) {
      return new TestEtcd(shared, null);
    }
    assumeTrue(
        EtcdProcess.available(),
        () -> {
          String reason =
              VARIABLE
                  + " is unset and no etcd binary is on the PATH (apt-get install etcd-server)";
          System.err.println(testClass.getSimpleName() + " skipped: " + reason);
          return reason;
        });
    EtcdProcess started = EtcdProcess.start();
    return new TestEtcd(started.endpoint(), started);
  }

  /** Returns the client URL. */
  public String endpoint() {
    return endpoint;
  }

  /** Stops the etcd started for the class, if one was; a shared one is left running. */
  @Override
  public void close() throws InterruptedException, IOException {
    if (own != null) {
      own.close();
    }
  }
}
