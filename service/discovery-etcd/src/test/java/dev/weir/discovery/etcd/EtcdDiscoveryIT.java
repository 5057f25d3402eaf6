package dev.weir.discovery.etcd;

import static dev.weir.core.discovery.RecordingListener.eventually;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.discovery.RecordingListener;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.testkit.EtcdProcess;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.core.testkit.TestEtcd;
import dev.weir.core.time.Clock;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.options.GetOption;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Etcd discovery against a real etcd: {@code WEIR_TEST_ETCD} when set (as {@code .ci/run} does),
 * otherwise an etcd process started here when the binary is on the PATH; skipped with the reason
 * otherwise. The restart test always needs its own process.
 */
class EtcdDiscoveryIT {
  private static final Duration WAIT = Duration.ofSeconds(15);
  private static final String ERROR = "discovery error etcd";
  private static TestEtcd testEtcd;
  private static String endpoint;

  private final List<EtcdDiscovery> nodes = new ArrayList<>();
  private final RecordingMetrics metrics = new RecordingMetrics();
  private final String prefix = "/weir-test-" + UUID.randomUUID() + "/";
  private final Logger discoveryLogger = (Logger) LoggerFactory.getLogger(EtcdDiscovery.class);
  private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

  @BeforeAll
  static void etcd() throws Exception {
    testEtcd = TestEtcd.forClass(EtcdDiscoveryIT.class);
    endpoint = testEtcd.endpoint();
  }

  @AfterAll
  static void stopEtcd() throws Exception {
    if (testEtcd != null) {
      testEtcd.close();
    }
  }

  @AfterEach
  void stopRecordingLog() {
    discoveryLogger.detachAppender(logged);
  }

  /** Starts recording in {@link #logged} what {@link EtcdDiscovery} logs, until the test ends. */
  private void recordLog() {
    logged.start();
    discoveryLogger.addAppender(logged);
  }

  @AfterEach
  void closeNodes() throws Exception {
    for (EtcdDiscovery node : nodes) {
      node.close();
    }
  }

  @Test
  void start_threeNodes_everyNodeSeesAll() throws Exception {
    RecordingListener a = join(endpoint, "10.0.0.1:1051", Duration.ofSeconds(30));
    RecordingListener b = join(endpoint, "10.0.0.2:1051", Duration.ofSeconds(30));
    RecordingListener c = join(endpoint, "10.0.0.3:1051", Duration.ofSeconds(30));

    Set<String> all = Set.of("10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.3:1051");
    assertThat(eventually(WAIT, () -> a.last().equals(all) && b.last().equals(all))).isTrue();
    assertThat(c.last()).isEqualTo(all);
    assertThat(nodes.get(0).problem()).isEmpty();
  }

  @Test
  void start_otherDataCenterOnThePrefix_leftOffTheRing() throws Exception {
    RecordingListener a = join(settings(endpoint, Duration.ofSeconds(30), "a"), "10.0.0.1:1051");
    RecordingListener b = join(settings(endpoint, Duration.ofSeconds(30), "b"), "10.0.0.2:1051");
    join(settings(endpoint, Duration.ofSeconds(30), "a"), "10.0.0.3:1051");

    assertThat(eventually(WAIT, () -> a.last().contains("10.0.0.3:1051"))).isTrue();
    assertThat(a.last()).isEqualTo(Set.of("10.0.0.1:1051", "10.0.0.3:1051"));
    assertThat(b.last()).isEqualTo(Set.of("10.0.0.2:1051"));
    assertThat(nodes).extracting(EtcdDiscovery::dataCenter).containsExactly("a", "b", "a");
  }

  @Test
  void prefixThatStartsAnotherClustersPrefix_theirRegistrationsLeftOffTheRingAndWarned()
      throws Exception {
    recordLog();
    String weir = prefix.substring(0, prefix.length() - 1);
    EtcdSettings ours = settings(endpoint, Duration.ofSeconds(30)).withKeyPrefix(weir);
    EtcdSettings theirs = ours.withKeyPrefix(weir + "2");
    RecordingListener a = join(ours, "10.0.0.1:1051");
    RecordingListener b = join(theirs, "10.0.0.2:1051");
    join(ours, "10.0.0.3:1051");

    assertThat(eventually(WAIT, () -> a.last().contains("10.0.0.3:1051"))).isTrue();

    assertThat(a.last()).containsExactlyInAnyOrder("10.0.0.1:1051", "10.0.0.3:1051");
    assertThat(b.last()).containsExactly("10.0.0.2:1051");
    assertThat(warningsAbout(logged, weir + "210.0.0.2:1051"))
        .first()
        .asString()
        .contains("is not the prefix " + weir + " followed by its grpc-address 10.0.0.2:1051");
  }

  @Test
  void start_registersPeerInfoJsonUnderPrefix() throws Exception {
    join(endpoint, "10.0.0.1:1051", Duration.ofSeconds(30));
    try (Client client = Client.builder().endpoints(endpoint).build()) {
      var kvs =
          client
              .getKVClient()
              .get(bytes(prefix), GetOption.builder().isPrefix(true).build())
              .get(5, TimeUnit.SECONDS)
              .getKvs();
      assertThat(kvs).hasSize(1);
      assertThat(kvs.get(0).getKey().toString(StandardCharsets.UTF_8))
          .isEqualTo(prefix + "10.0.0.1:1051");
      assertThat(kvs.get(0).getValue().toString(StandardCharsets.UTF_8))
          .isEqualTo(
              "{\"grpc-address\":\"10.0.0.1:1051\",\"data-center\":\"dc1\","
                  + "\"grpc_address\":\"10.0.0.1:1051\",\"data_center\":\"dc1\"}");
      assertThat(kvs.get(0).getLease()).isNotZero();
    }
  }

  @Test
  void keyWhoseValueIsNotAPeerRecord_leftOffTheRingAndWarnedOncePerValue() throws Exception {
    recordLog();
    try (Client admin = Client.builder().endpoints(endpoint).build()) {
      KV kv = admin.getKVClient();
      String handWritten = prefix + "x";
      kv.put(bytes(handWritten), bytes("hello")).get(5, TimeUnit.SECONDS);
      FakeClock clock = new FakeClock();
      RecordingListener seen =
          join(settings(endpoint, Duration.ofSeconds(30), ""), "10.0.0.1:1051", clock);

      kv.put(bytes(handWritten), bytes("hello")).get(5, TimeUnit.SECONDS);
      kv.put(bytes(prefix + "10.0.0.2:1051"), bytes("{\"grpc-address\":\"10.0.0.2:1051\"}"))
          .get(5, TimeUnit.SECONDS);
      assertThat(eventually(WAIT, () -> seen.last().contains("10.0.0.2:1051"))).isTrue();

      assertThat(seen.received())
          .allSatisfy(peers -> assertThat(peers).doesNotContain("x", "hello"));
      assertThat(warningsAbout(logged, handWritten))
          .singleElement()
          .asString()
          .contains("'hello'", "not a JSON object");

      clock.advance(RateLimitedLogger.DEFAULT_INTERVAL);
      kv.put(bytes(handWritten), bytes("{\"data-center\":\"\"}")).get(5, TimeUnit.SECONDS);
      assertThat(eventually(WAIT, () -> warningsAbout(logged, handWritten).size() == 2)).isTrue();
      assertThat(warningsAbout(logged, handWritten).get(1)).contains("no grpc-address");
      assertThat(seen.last()).containsExactlyInAnyOrder("10.0.0.1:1051", "10.0.0.2:1051");
    }
  }

  @Test
  void registrationWhosePeerAddressIsNoAddress_staysOnTheRingWithoutPeerListenerAndIsWarned()
      throws Exception {
    recordLog();
    try (Client admin = Client.builder().endpoints(endpoint).build()) {
      String key = prefix + "10.0.0.2:1051";
      admin
          .getKVClient()
          .put(
              bytes(key),
              bytes("{\"grpc-address\":\"10.0.0.2:1051\",\"peer_address\":\"10.0.0.2\"}"))
          .get(5, TimeUnit.SECONDS);
      RecordingListener seen =
          join(settings(endpoint, Duration.ofSeconds(30), ""), "10.0.0.1:1051");

      assertThat(eventually(WAIT, () -> seen.last().contains("10.0.0.2:1051"))).isTrue();
      assertThat(nodes.get(nodes.size() - 1).peerAddress("10.0.0.2:1051")).isEmpty();
      assertThat(warningsAbout(logged, key))
          .singleElement()
          .asString()
          .contains("the field \"peer_address\" is \"10.0.0.2\"", "read as absent");
    }
  }

  @Test
  void twoBadKeysAtStart_theOneWhoseLineWasSuppressedIsNamedAtItsNextPutAfterTheWindow()
      throws Exception {
    recordLog();
    try (Client admin = Client.builder().endpoints(endpoint).build()) {
      KV kv = admin.getKVClient();
      String first = prefix + "x";
      String second = prefix + "y";
      kv.put(bytes(first), bytes("hello")).get(5, TimeUnit.SECONDS);
      kv.put(bytes(second), bytes("world")).get(5, TimeUnit.SECONDS);
      FakeClock clock = new FakeClock();
      RecordingListener seen =
          join(settings(endpoint, Duration.ofSeconds(30), ""), "10.0.0.1:1051", clock);

      assertThat(warningsAbout(logged, first)).singleElement().asString().contains("'hello'");
      assertThat(warningsAbout(logged, second)).isEmpty();

      clock.advance(RateLimitedLogger.DEFAULT_INTERVAL);
      kv.put(bytes(second), bytes("world")).get(5, TimeUnit.SECONDS);
      assertThat(eventually(WAIT, () -> warningsAbout(logged, second).size() == 1))
          .as("a WARN naming %s", second)
          .isTrue();
      assertThat(warningsAbout(logged, second).get(0))
          .contains("'world'", "(suppressed 1 similar lines)");
      assertThat(seen.last()).containsExactly("10.0.0.1:1051");
    }
  }

  @Test
  void keyTakingANewBadValueAtEachPut_oneWarnLinePerWindowThenTheSuppressedCount()
      throws Exception {
    recordLog();
    try (Client admin = Client.builder().endpoints(endpoint).build()) {
      KV kv = admin.getKVClient();
      FakeClock clock = new FakeClock();
      RecordingListener seen =
          join(settings(endpoint, Duration.ofSeconds(30), ""), "10.0.0.1:1051", clock);
      String foreign = prefix + "foreign";

      for (int i = 1; i <= 5; i++) {
        kv.put(bytes(foreign), bytes("{\"n\":" + i + "}")).get(5, TimeUnit.SECONDS);
      }
      kv.put(bytes(prefix + "10.0.0.2:1051"), bytes("{\"grpc-address\":\"10.0.0.2:1051\"}"))
          .get(5, TimeUnit.SECONDS);
      assertThat(eventually(WAIT, () -> seen.last().contains("10.0.0.2:1051"))).isTrue();

      assertThat(warningsAbout(logged, foreign)).singleElement().asString().contains("{\"n\":1}");

      clock.advance(RateLimitedLogger.DEFAULT_INTERVAL);
      kv.put(bytes(foreign), bytes("{\"n\":6}")).get(5, TimeUnit.SECONDS);
      assertThat(eventually(WAIT, () -> warningsAbout(logged, foreign).size() == 2)).isTrue();
      assertThat(warningsAbout(logged, foreign).get(1))
          .contains("{\"n\":6}", "(suppressed 4 similar lines)");
    }
  }

  /** Returns the WARN lines of {@code logged} that name {@code key}. */
  private static List<String> warningsAbout(ListAppender<ILoggingEvent> logged, String key) {
    synchronized (logged) {
      return logged.list.stream()
          .filter(e -> e.getLevel() == Level.WARN)
          .map(ILoggingEvent::getFormattedMessage)
          .filter(m -> m.contains(key))
          .toList();
    }
  }

  @Test
  void start_withPeerPorts_eachNodeReportsTheOthersPeerListener() throws Exception {
    EtcdSettings settings = settings(endpoint, Duration.ofSeconds(30));
    EtcdDiscovery a = EtcdDiscovery.create(settings, "127.0.0.1:1051", 1052, metrics);
    EtcdDiscovery b = EtcdDiscovery.create(settings, "127.0.0.1:2051", 2052, metrics);
    nodes.add(a);
    nodes.add(b);
    RecordingListener seenByA = new RecordingListener();
    a.start(seenByA);
    b.start(new RecordingListener());

    assertThat(eventually(WAIT, () -> seenByA.last().size() == 2)).isTrue();
    assertThat(a.peerAddress("127.0.0.1:2051")).hasValue("127.0.0.1:2052");
    assertThat(b.peerAddress("127.0.0.1:1051")).hasValue("127.0.0.1:1052");
    assertThat(a.peerAddress("127.0.0.1:3051")).isEmpty();
  }

  @Test
  void memberRestartsWithAnotherPeerPort_othersAreToldAndReportTheNewListener() throws Exception {
    EtcdSettings settings = settings(endpoint, Duration.ofSeconds(30));
    EtcdDiscovery a = EtcdDiscovery.create(settings, "127.0.0.1:1051", 1052, metrics);
    EtcdDiscovery b = EtcdDiscovery.create(settings, "127.0.0.1:2051", 2052, metrics);
    nodes.add(a);
    nodes.add(b);
    RecordingListener seenByA = new RecordingListener();
    a.start(seenByA);
    b.start(new RecordingListener());
    assertThat(eventually(WAIT, () -> seenByA.last().size() == 2)).isTrue();
    int deliveries = seenByA.received().size();

    b.halt();
    EtcdDiscovery restarted = EtcdDiscovery.create(settings, "127.0.0.1:2051", 3052, metrics);
    nodes.add(restarted);
    restarted.start(new RecordingListener());

    assertThat(
            eventually(
                WAIT,
                () -> a.peerAddress("127.0.0.1:2051").equals(Optional.of("127.0.0.1:3052"))))
        .isTrue();
    assertThat(eventually(WAIT, () -> seenByA.received().size() > deliveries))
        .as("the same members delivered again, so that the node dials the new listener")
        .isTrue();
    assertThat(seenByA.last()).containsExactlyInAnyOrder("127.0.0.1:1051", "127.0.0.1:2051");
  }

  @Test
  void ownKeyDeletedWhileTheLeaseLives_registersItAgain() throws Exception {
    RecordingListener seenByB = join(endpoint, "10.0.0.2:1051", Duration.ofSeconds(30));
    join(endpoint, "10.0.0.1:1051", Duration.ofSeconds(30));
    assertThat(eventually(WAIT, () -> seenByB.last().size() == 2)).isTrue();
    try (Client admin = Client.builder().endpoints(endpoint).build()) {
      long lease = leaseOf(admin, prefix + "10.0.0.1:1051");

      admin.getKVClient().delete(bytes(prefix + "10.0.0.1:1051")).get(5, TimeUnit.SECONDS);

      assertThat(
              eventually(
                  WAIT,
                  () -> leaseOf(admin, prefix + "10.0.0.1:1051") == lease))
          .as("the key is back under the live lease")
          .isTrue();
      assertThat(eventually(WAIT, () -> seenByB.last().size() == 2)).isTrue();
    }
  }

  @Test
  void close_afterAnAttemptThatRegisteredButCouldNotReadThePeers_revokesThatLease()
      throws Exception {
    Client real = Client.builder().endpoints(endpoint).build();
    EtcdDiscovery node =
        new EtcdDiscovery(
            failingReads(real), settings(endpoint, Duration.ofSeconds(30)), "10.0.0.1:1051");
    nodes.add(node);
    node.start(new RecordingListener());
    try (Client admin = Client.builder().endpoints(endpoint).build()) {
      assertThat(eventually(WAIT, () -> leaseOf(admin, prefix + "10.0.0.1:1051") > 0))
          .as("registered, though the peers could not be read")
          .isTrue();

      node.close();

      assertThat(leaseOf(admin, prefix + "10.0.0.1:1051"))
          .as("its lease revoked: peers drop the stopped node at once, not after 30 s")
          .isZero();
    }
  }

  /**
   * A keep-alive that etcd does not answer must not hold the discovery thread for the dial
   * timeout: the watch's events (a peer joining) and shutdown wait behind it otherwise.
   */
  @Test
  void keepAliveUnanswered_peersStillDeliveredAndCloseReturnsAtOnce() throws Exception {
    AtomicInteger keepAlives = new AtomicInteger();
    EtcdSettings slow = settings(endpoint, Duration.ofSeconds(6), Duration.ofSeconds(20));
    EtcdDiscovery node =
        new EtcdDiscovery(
            unansweredKeepAlives(Client.builder().endpoints(endpoint).build(), keepAlives),
            slow,
            "10.0.0.1:1051");
    nodes.add(node);
    RecordingListener a = new RecordingListener();
    node.start(a);
    assertThat(eventually(WAIT, () -> keepAlives.get() > 0)).isTrue();

    join(endpoint, "10.0.0.2:1051", Duration.ofSeconds(30));

    assertThat(eventually(Duration.ofSeconds(3), () -> a.last().contains("10.0.0.2:1051")))
        .as("the joining peer delivered while a keep-alive is unanswered")
        .isTrue();
    long start = System.nanoTime();
    node.close();
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
  }

  /**
   * Returns {@code real} whose lease client never answers a keep-alive, each counted in {@code
   * calls}.
   */
  private static Client unansweredKeepAlives(Client real, AtomicInteger calls) {
    Lease lease = real.getLeaseClient();
    Lease unanswered =
        (Lease)
            Proxy.newProxyInstance(
                Lease.class.getClassLoader(),
                new Class<?>[] {Lease.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("keepAliveOnce")) {
                    calls.incrementAndGet();
                    return new CompletableFuture<>();
                  }
                  return invoke(method, lease, args);
                });
    return (Client)
        Proxy.newProxyInstance(
            Client.class.getClassLoader(),
            new Class<?>[] {Client.class},
            (proxy, method, args) ->
                method.getName().equals("getLeaseClient")
                    ? unanswered
                    : invoke(method, real, args));
  }

  /** Returns {@code real} with every range read of its KV client failing. */
  private static Client failingReads(Client real) {
    KV kv = real.getKVClient();
    KV failing =
        (KV)
            Proxy.newProxyInstance(
                KV.class.getClassLoader(),
                new Class<?>[] {KV.class},
                (proxy, method, args) ->
                    method.getName().equals("get")
                        ? CompletableFuture.failedFuture(new IllegalStateException("read refused"))
                        : invoke(method, kv, args));
    return (Client)
        Proxy.newProxyInstance(
            Client.class.getClassLoader(),
            new Class<?>[] {Client.class},
            (proxy, method, args) ->
                method.getName().equals("getKVClient") ? failing : invoke(method, real, args));
  }

  private static Object invoke(Method method, Object target, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Test
  void close_revokesLease_peerDisappearsAtOnce() throws Exception {
    RecordingListener a = join(endpoint, "10.0.0.1:1051", Duration.ofSeconds(30));
    join(endpoint, "10.0.0.2:1051", Duration.ofSeconds(30));
    assertThat(eventually(WAIT, () -> a.last().size() == 2)).isTrue();

    nodes.remove(1).close();

    assertThat(eventually(Duration.ofSeconds(5), () -> a.last().equals(Set.of("10.0.0.1:1051"))))
        .isTrue();
  }

  @Test
  void halt_withoutRevoke_peerDisappearsWhenLeaseExpires() throws Exception {
    RecordingListener a = join(endpoint, "10.0.0.1:1051", Duration.ofSeconds(2));
    join(endpoint, "10.0.0.2:1051", Duration.ofSeconds(2));
    assertThat(eventually(WAIT, () -> a.last().size() == 2)).isTrue();

    nodes.remove(1).halt();

    assertThat(a.last()).hasSize(2);
    assertThat(eventually(WAIT, () -> a.last().equals(Set.of("10.0.0.1:1051")))).isTrue();
  }

  @Test
  void start_etcdUnreachable_deliversSelfAndReportsProblem() throws Exception {
    String nowhere = "http://127.0.0.1:" + EtcdProcess.freePort();
    EtcdSettings settings =
        settings(nowhere, Duration.ofSeconds(30)).withDialTimeout(Duration.ofMillis(300));
    EtcdDiscovery node = EtcdDiscovery.create(settings, "10.0.0.1:1051", metrics);
    nodes.add(node);
    RecordingListener listener = new RecordingListener();

    node.start(listener);

    assertThat(listener.received()).containsExactly(Set.of("10.0.0.1:1051"));
    assertThat(node.problem())
        .contains("etcd discovery degraded")
        .contains(nowhere)
        .doesNotContain("maxDuration");
    assertThat(metrics.events()).isNotEmpty().containsOnly(ERROR);
    assertThat(eventually(WAIT, () -> metrics.count(ERROR) >= 3)).isTrue();
    assertThat(metrics.events()).containsOnly(ERROR);
  }

  @Test
  void leaseRevokedByAnotherClient_countsOneErrorAndRegistersUnderNewLease() throws Exception {
    join(endpoint, "10.0.0.1:1051", Duration.ofSeconds(2));
    try (Client admin = Client.builder().endpoints(endpoint).build()) {
      long lease = leaseOf(admin, prefix + "10.0.0.1:1051");

      admin.getLeaseClient().revoke(lease).get(5, TimeUnit.SECONDS);

      assertThat(
              eventually(
                  WAIT,
                  () ->
                      metrics.count(ERROR) >= 1
                          && nodes.get(0).problem().isEmpty()
                          && leaseOf(admin, prefix + "10.0.0.1:1051") > 0))
          .isTrue();
      assertThat(leaseOf(admin, prefix + "10.0.0.1:1051")).isNotEqualTo(lease);
      assertThat(metrics.events()).containsExactly(ERROR);
    }
  }

  @Test
  void etcdRestart_keepsPeersReportsProblem_thenRecoversAndWatchesAgain() throws Exception {
    assumeTrue(
        EtcdProcess.available(),
        () -> skipped("the restart test needs an etcd binary on the PATH"));
    try (EtcdProcess etcd = EtcdProcess.start()) {
      RecordingListener a = join(etcd.endpoint(), "10.0.0.1:1051", Duration.ofSeconds(2));
      join(etcd.endpoint(), "10.0.0.2:1051", Duration.ofSeconds(2));
      Set<String> both = Set.of("10.0.0.1:1051", "10.0.0.2:1051");
      assertThat(eventually(WAIT, () -> a.last().equals(both))).isTrue();

      etcd.stop();

      assertThat(eventually(WAIT, () -> !nodes.get(0).problem().isEmpty())).isTrue();
      assertThat(eventually(WAIT, () -> metrics.count(ERROR) >= 2)).isTrue();
      assertThat(nodes.get(0).problem()).contains("keeping the last 2 known peers");
      assertThat(a.last()).isEqualTo(both);

      etcd.restart();

      assertThat(eventually(WAIT, () -> nodes.get(0).problem().isEmpty())).isTrue();
      assertThat(eventually(WAIT, () -> nodes.get(1).problem().isEmpty())).isTrue();
      assertThat(a.last()).isEqualTo(both);
      join(etcd.endpoint(), "10.0.0.3:1051", Duration.ofSeconds(2));
      assertThat(eventually(WAIT, () -> a.last().size() == 3)).isTrue();
      for (EtcdDiscovery node : nodes) {
        node.close();
      }
      nodes.clear();
    }
  }

  private RecordingListener join(String etcd, String address, Duration ttl) throws Exception {
    return join(settings(etcd, ttl), address);
  }

  private RecordingListener join(EtcdSettings settings, String address, Clock clock)
      throws Exception {
    EtcdDiscovery node =
        new EtcdDiscovery(
            EtcdDiscovery.buildClient(settings), settings, address, 0, metrics, clock);
    nodes.add(node);
    RecordingListener listener = new RecordingListener();
    node.start(listener);
    return listener;
  }

  private RecordingListener join(EtcdSettings settings, String address) throws Exception {
    EtcdDiscovery node = EtcdDiscovery.create(settings, address, metrics);
    nodes.add(node);
    RecordingListener listener = new RecordingListener();
    node.start(listener);
    return listener;
  }

  private EtcdSettings settings(String etcd, Duration ttl) {
    return settings(etcd, ttl, "dc1");
  }

  private EtcdSettings settings(String etcd, Duration ttl, Duration dialTimeout) {
    return new EtcdSettings(
        List.of(etcd),
        prefix,
        dialTimeout,
        ttl,
        "",
        "",
        Optional.empty(),
        "dc1",
        Optional.empty(),
        EtcdSettings.KEY_PREFIX_VARIABLE);
  }

  private EtcdSettings settings(String etcd, Duration ttl, String dataCenter) {
    return new EtcdSettings(
        List.of(etcd),
        prefix,
        Duration.ofSeconds(1),
        ttl,
        "",
        "",
        Optional.empty(),
        dataCenter,
        Optional.empty(),
        EtcdSettings.KEY_PREFIX_VARIABLE);
  }

  /** Returns the lease of {@code key}, or 0 when the key is absent or etcd cannot be read. */
  private static long leaseOf(Client client, String key) {
    try {
      var kvs = client.getKVClient().get(bytes(key)).get(5, TimeUnit.SECONDS).getKvs();
      return kvs.isEmpty() ? 0 : kvs.get(0).getLease();
    } catch (Exception e) {
      return 0;
    }
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  private static String skipped(String reason) {
    System.err.println("EtcdDiscoveryIT skipped: " + reason);
    return reason;
  }
}
