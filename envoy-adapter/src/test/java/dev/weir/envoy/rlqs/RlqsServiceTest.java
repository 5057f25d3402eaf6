package dev.weir.envoy.rlqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.BucketId;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse.BucketAction;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaServiceGrpc;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports;
import io.envoyproxy.envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports.BucketQuotaUsage;
import io.envoyproxy.envoy.type.v3.RateLimitStrategy;
import io.envoyproxy.envoy.type.v3.TokenBucket;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The RLQS protocol as one node serves it (a one-node in-JVM cluster, fake time), seen from a raw
 * stream of Envoy's generated client stub.
 */
class RlqsServiceTest {

  private static final String YAML =
      """
      domain: edge
      descriptors:
        - key: name
          value: api
          rate_limit: {unit: minute, requests_per_unit: 600}
        - key: name
          value: internal
          rate_limit: {unlimited: true}
        - key: name
          value: tiny
          rate_limit: {unit: minute, requests_per_unit: 10}
        - key: path
          value: "report*"
          share_threshold: true
          rate_limit: {unit: minute, requests_per_unit: 600}
        - key: name
          value: daily
          rate_limit: {unit: day, requests_per_unit: 1000}
        - key: name
          value: monthly
          rate_limit: {unit: month, requests_per_unit: 10000}
        - key: name
          value: per-second
          rate_limit: {unit: second, requests_per_unit: 100}
        - key: name
          value: shadow
          shadow_mode: true
          rate_limit: {unit: minute, requests_per_unit: 10}
        - key: name
          value: per-user
          descriptors:
            - key: user
              rate_limit: {unit: minute, requests_per_unit: 60}
      """;

  private static final BucketId API = bucket("api");
  private static final BucketId TINY = bucket("tiny");
  private static final RlqsSettings SETTINGS =
      new RlqsSettings(Duration.ofSeconds(5), RlqsSettings.Unmatched.ALLOW_ALL);

  private final FakeClock clock = new FakeClock();
  private final List<Proxy> proxies = new ArrayList<>();
  private RlqsCluster cluster;

  private static BucketId bucket(String name) {
    return BucketId.newBuilder().putBucket("name", name).build();
  }

  private static BucketId path(String path) {
    return BucketId.newBuilder().putBucket("path", path).build();
  }

  private static BucketQuotaUsage usage(BucketId bucket, long allowed, long denied, long seconds) {
    return BucketQuotaUsage.newBuilder()
        .setBucketId(bucket)
        .setNumRequestsAllowed(allowed)
        .setNumRequestsDenied(denied)
        .setTimeElapsed(com.google.protobuf.Duration.newBuilder().setSeconds(seconds))
        .build();
  }

  private void start(RlqsSettings settings) {
    cluster = RlqsCluster.start(clock, 1, YAML, settings);
  }

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** Returns a bucket of 65 entries, one more than WEIR_MAX_DESCRIPTOR_ENTRIES allows. */
  private static BucketId bucketOf65Entries() {
    BucketId.Builder big = BucketId.newBuilder();
    for (int i = 0; i < 65; i++) {
      big.putBucket("k" + i, "v");
    }
    return big.build();
  }

  /** A proxy's raw stream: sends the reports a test writes, records what comes back. */
  private final class Proxy implements StreamObserver<RateLimitQuotaResponse> {
    final List<RateLimitQuotaResponse> responses = new CopyOnWriteArrayList<>();
    final StreamObserver<RateLimitQuotaUsageReports> out;
    volatile Status ended;
    volatile long sent;

    Proxy(Channel channel) {
      out = RateLimitQuotaServiceGrpc.newStub(channel).streamRateLimitQuotas(this);
      proxies.add(this);
    }

    void report(String domain, BucketId bucket, long allowed, long denied, long seconds) {
      report(domain, usage(bucket, allowed, denied, seconds));
    }

    /** Sends one report of {@code usages}, as Envoy reports every bucket it holds at once. */
    void report(String domain, BucketQuotaUsage... usages) {
      sent++;
      out.onNext(
          RateLimitQuotaUsageReports.newBuilder()
              .setDomain(domain)
              .addAllBucketQuotaUsages(List.of(usages))
              .build());
      settle();
    }

    BucketAction last() {
      List<BucketAction> actions = responses.get(responses.size() - 1).getBucketActionList();
      return actions.get(actions.size() - 1);
    }

    /** Returns the last action received for {@code bucket}, of every response so far. */
    BucketAction last(BucketId bucket) {
      BucketAction found = null;
      for (RateLimitQuotaResponse r : responses) {
        for (BucketAction a : r.getBucketActionList()) {
          if (a.getBucketId().equals(bucket)) {
            found = a;
          }
        }
      }
      assertThat(found).as("an action for %s", bucket.getBucketMap()).isNotNull();
      return found;
    }

    @Override
    public void onNext(RateLimitQuotaResponse value) {
      responses.add(value);
    }

    @Override
    public void onError(Throwable t) {
      ended = Status.fromThrowable(t);
    }

    @Override
    public void onCompleted() {
      ended = Status.OK;
    }
  }

  private void settle() {
    cluster.settle(
        () -> proxies.stream().mapToLong(p -> p.sent).sum(),
        () -> proxies.stream().mapToLong(p -> p.responses.size()).sum());
  }

  private void advance(Duration step) {
    cluster.advance(
        step,
        () -> proxies.stream().mapToLong(p -> p.sent).sum(),
        () -> proxies.stream().mapToLong(p -> p.responses.size()).sum());
  }

  private static RateLimitStrategy strategy(BucketAction action) {
    return action.getQuotaAssignmentAction().getRateLimitStrategy();
  }

  private static int tokensPerFill(BucketAction action) {
    return strategy(action).getTokenBucket().getTokensPerFill().getValue();
  }

  @Test
  void limitedBucket_firstReport_isAnsweredWithATokenBucketOfTheWindowsPace() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));

    proxy.report("edge", API, 1, 0, 0);

    BucketAction action = proxy.last();
    assertThat(action.getBucketId()).isEqualTo(API);
    assertThat(strategy(action).getTokenBucket().getTokensPerFill().getValue()).isBetween(590, 600);
    assertThat(strategy(action).getTokenBucket().getFillInterval().getSeconds()).isEqualTo(60);
    assertThat(action.getQuotaAssignmentAction().getAssignmentTimeToLive().getSeconds())
        .isEqualTo(10);
  }

  @Test
  void reportsThatThrowOrGiveNoFuture_streamStaysOpenAndTheNextReportIsAnswered() {
    AtomicInteger broken = new AtomicInteger(2);
    cluster =
        RlqsCluster.start(
            clock,
            1,
            YAML,
            SETTINGS,
            reports ->
                usage -> {
                  int left = broken.getAndDecrement();
                  if (left == 2) {
                    throw new IllegalStateException("reports bug");
                  }
                  return left == 1 ? null : reports.report(usage);
                });
    Proxy proxy = new Proxy(cluster.endpoints().get(0));

    proxy.report("edge", API, 1, 0, 0);
    proxy.report("edge", API, 1, 0, 0);
    assertThat(proxy.responses).as("no share yet, so no assignment").isEmpty();
    proxy.report("edge", API, 1, 0, 0);

    assertThat(proxy.ended).as("the stream is still open").isNull();
    assertThat(strategy(proxy.last()).getTokenBucket().getTokensPerFill().getValue())
        .isBetween(590, 600);
    assertThat(cluster.service(0).stats().pending()).isZero();
  }

  @Test
  void unlimitedAndUnmatchedBuckets_areAllowedAll() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));

    proxy.report("edge", bucket("internal"), 1, 0, 0);
    proxy.report("edge", bucket("nothing"), 1, 0, 0);
    proxy.report("other-domain", bucket("api"), 1, 0, 0);
    settleUntilEnded(proxy);

    assertThat(proxy.responses).hasSize(2);
    assertThat(proxy.responses)
        .allSatisfy(
            r ->
                assertThat(strategy(r.getBucketAction(0)).getBlanketRule())
                    .isEqualTo(RateLimitStrategy.BlanketRule.ALLOW_ALL));
    assertThat(proxy.ended.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(proxy.ended.getDescription()).contains("'edge'", "'other-domain'");
  }

  @Test
  void unmatchedBucket_withDenyAllConfigured_isDeniedAll() {
    start(new RlqsSettings(Duration.ofSeconds(5), RlqsSettings.Unmatched.DENY_ALL));
    Proxy proxy = new Proxy(cluster.endpoints().get(0));

    proxy.report("edge", bucket("nothing"), 1, 0, 0);

    assertThat(strategy(proxy.last()).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);
  }

  @Test
  void firstReportWithoutDomain_endsTheStreamNamingTheProblem() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));

    proxy.report("", API, 1, 0, 0);
    settleUntilEnded(proxy);

    assertThat(proxy.ended.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(proxy.ended.getDescription()).contains("domain");
    assertThat(cluster.service(0).stats().streams()).isZero();
  }

  @Test
  void bucketWithMoreEntriesThanAllowed_isDeniedAllAndCountedAsRefusedOnce() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    BucketId big = bucketOf65Entries();

    proxy.report("edge", big, 1, 0, 0);
    advance(Duration.ofSeconds(5));
    proxy.report("edge", big, 0, 3, 5);

    assertThat(strategy(proxy.last()).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);
    assertThat(proxy.responses).hasSize(2);
    assertThat(cluster.metrics().events())
        .as("counted once for the bucket, not once per report")
        .containsExactly("refused too_many_entries");
  }

  @Test
  void bucketWithMoreEntriesThanAllowed_isLoggedNamingTheCountTheBoundAndTheSetting() {
    ListAppender<ILoggingEvent> appender = rlqsLog();
    try {
      start(SETTINGS);
      Proxy proxy = new Proxy(cluster.endpoints().get(0));
      BucketId big = bucketOf65Entries();

      proxy.report("edge", big, 1, 0, 0);

      assertThat(appender.list)
          .extracting(ILoggingEvent::getFormattedMessage)
          .anySatisfy(
              line ->
                  assertThat(line)
                      .contains("DENY_ALL")
                      .contains("65 entries")
                      .contains("at most 64")
                      .contains("WEIR_MAX_DESCRIPTOR_ENTRIES"));
    } finally {
      detach(appender);
    }
  }

  @Test
  void bucketWithAnEmptyValue_isDeniedAllNotCountedAsTooManyEntries() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));

    proxy.report("edge", BucketId.newBuilder().putBucket("name", "").build(), 1, 0, 0);

    assertThat(strategy(proxy.last()).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);
    assertThat(cluster.metrics().events()).isEmpty();
  }

  @Test
  void bucketWithAnEmptyValue_isLoggedNamingTheEntryTheDomainAndTheStream() {
    ListAppender<ILoggingEvent> appender = rlqsLog();
    try {
      start(SETTINGS);
      Proxy proxy = new Proxy(cluster.endpoints().get(0));

      proxy.report("edge", BucketId.newBuilder().putBucket("path", "").build(), 1, 0, 0);

      assertThat(refusals(appender))
          .singleElement()
          .satisfies(
              line ->
                  assertThat(line)
                      .contains("bucket entry 'path' has an empty value")
                      .contains("domain 'edge'")
                      .containsPattern("stream '[^']+/[0-9]+\\.1'"));
    } finally {
      detach(appender);
    }
  }

  @Test
  void refusalsOfEachKind_areLoggedOncePer10sEach_onTheServicesClock() {
    ListAppender<ILoggingEvent> appender = rlqsLog();
    try {
      start(SETTINGS);
      Proxy proxy = new Proxy(cluster.endpoints().get(0));
      proxy.report("edge", BucketId.newBuilder().putBucket("a", "").build(), 1, 0, 0);
      proxy.report("edge", BucketId.newBuilder().putBucket("b", "").build(), 1, 0, 0);
      proxy.report("edge", bucketOf65Entries(), 1, 0, 0);

      assertThat(refusals(appender))
          .as("two empty-value buckets log one line; too many entries is another kind")
          .hasSize(2)
          .anySatisfy(line -> assertThat(line).contains("entry 'a'"))
          .anySatisfy(line -> assertThat(line).contains("65 entries"));

      clock.advance(Duration.ofSeconds(10));
      proxy.report("edge", BucketId.newBuilder().putBucket("c", "").build(), 1, 0, 0);

      assertThat(refusals(appender))
          .as("10 s later on the service's clock, a second line of the kind")
          .hasSize(3)
          .last()
          .satisfies(line -> assertThat(line).contains("entry 'c'"));
    } finally {
      detach(appender);
    }
  }

  private static ListAppender<ILoggingEvent> rlqsLog() {
    ch.qos.logback.classic.Logger log =
        (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(RlqsService.class);
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    log.addAppender(appender);
    return appender;
  }

  private static void detach(ListAppender<ILoggingEvent> appender) {
    ((ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(RlqsService.class))
        .detachAppender(appender);
  }

  private static List<String> refusals(ListAppender<ILoggingEvent> appender) {
    return appender.list.stream()
        .map(ILoggingEvent::getFormattedMessage)
        .filter(line -> line.contains("an RLQS bucket is assigned DENY_ALL"))
        .toList();
  }

  @Test
  void spentWindow_deniesEveryProxyAtOnceAndSharesAgainWhenItEnds() {
    start(SETTINGS);
    Proxy a = new Proxy(cluster.endpoints().get(0));
    Proxy b = new Proxy(cluster.endpoints().get(0));
    a.report("edge", TINY, 1, 0, 0);
    b.report("edge", TINY, 1, 0, 0);
    advance(Duration.ofSeconds(5));
    int bSeen = b.responses.size();

    a.report("edge", TINY, 9, 20, 5);

    assertThat(strategy(a.last()).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);
    assertThat(b.responses).hasSize(bSeen + 1);
    assertThat(strategy(b.last()).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);

    for (int second = 10; second <= 60; second += 5) {
      advance(Duration.ofSeconds(5));
      assertThat(strategy(b.last()).hasTokenBucket()).as("at %d s", second).isEqualTo(second == 60);
      if (second < 60) {
        a.report("edge", TINY, 0, 10, 5);
        b.report("edge", TINY, 0, 10, 5);
      }
    }

    assertThat(strategy(a.last()).hasTokenBucket()).isTrue();
    assertThat(strategy(b.last()).hasTokenBucket()).isTrue();
  }

  @Test
  void shareThresholdWildcard_bucketsOfOneProxySplitItsOneShare() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    BucketId a = path("report-a");
    BucketId b = path("report-b");

    proxy.report("edge", a, 1, 0, 0);
    int alone = tokensPerFill(proxy.last(a));
    proxy.report("edge", b, 1, 0, 0);

    assertThat(alone).isBetween(590, 600);
    assertThat(tokensPerFill(proxy.last(a)) + tokensPerFill(proxy.last(b)))
        .as("both buckets count on one counter: together no more than its 600 a minute")
        .isLessThanOrEqualTo(600);
    assertThat(tokensPerFill(proxy.last(a)))
        .as("demand unknown yet: an even split, the odd token to one of them")
        .isCloseTo(tokensPerFill(proxy.last(b)), within(1))
        .isGreaterThan(250);
    assertThat(cluster.cluster().node(0).cluster().quotaOwner().buckets()).isEqualTo(1);
  }

  @Test
  void shareThresholdWildcard_theBusierBucketGetsTheLargerPart() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    BucketId a = path("report-a");
    BucketId b = path("report-b");
    proxy.report("edge", usage(a, 1, 0, 0), usage(b, 1, 0, 0));
    advance(Duration.ofSeconds(5));

    proxy.report("edge", usage(a, 40, 0, 5), usage(b, 0, 0, 5));

    assertThat(tokensPerFill(proxy.last(a))).isGreaterThan(4 * tokensPerFill(proxy.last(b)));
    assertThat(tokensPerFill(proxy.last(b))).as("a quiet bucket can still start").isPositive();
    assertThat(tokensPerFill(proxy.last(a)) + tokensPerFill(proxy.last(b)))
        .isLessThanOrEqualTo(600);
  }

  @Test
  void shareThresholdWildcard_windowSpentByAnotherProxy_deniesEveryBucketOfTheCounter() {
    start(SETTINGS);
    Proxy one = new Proxy(cluster.endpoints().get(0));
    Proxy other = new Proxy(cluster.endpoints().get(0));
    BucketId a = path("report-a");
    BucketId b = path("report-b");
    one.report("edge", usage(a, 1, 0, 0), usage(b, 1, 0, 0));
    other.report("edge", path("report-c"), 1, 0, 0);
    advance(Duration.ofSeconds(5));

    other.report("edge", path("report-c"), 700, 50, 5);

    assertThat(strategy(other.last()).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);
    assertThat(strategy(one.last(a)).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);
    assertThat(strategy(one.last(b)).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);
  }

  @Test
  void bucketWithoutRequestsForAMinute_isAbandonedAndReleased_aLaterReportSubscribesItAnew() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    proxy.report("edge", API, 1, 0, 0);
    for (int second = 5; second < 60; second += 5) {
      advance(Duration.ofSeconds(5));
      proxy.report("edge", API, 0, 0, 5);
      assertThat(proxy.last().hasAbandonAction()).as("at %d s", second).isFalse();
    }
    assertThat(cluster.cluster().node(0).cluster().quotaOwner().buckets()).isEqualTo(1);

    advance(Duration.ofSeconds(5));
    proxy.report("edge", API, 0, 0, 5);

    assertThat(proxy.last().getBucketId()).isEqualTo(API);
    assertThat(proxy.last().hasAbandonAction()).as("60 s without requests").isTrue();
    assertThat(cluster.cluster().node(0).cluster().quotaOwner().buckets())
        .as("the owner no longer counts the proxy")
        .isZero();

    advance(Duration.ofSeconds(5));
    proxy.report("edge", API, 3, 0, 0);

    assertThat(proxy.last().getBucketId()).isEqualTo(API);
    assertThat(strategy(proxy.last()).getTokenBucket().getTokensPerFill().getValue())
        .as("what is left of the window, spread over its 55 s to go")
        .isBetween(590, 660);
    assertThat(cluster.cluster().node(0).cluster().quotaOwner().buckets()).isEqualTo(1);
  }

  @Test
  void bucketTheProxyNoLongerReports_isAbandonedAtALaterReportOfItsStream() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    BucketId busy = path("report-busy");
    proxy.report("edge", usage(API, 1, 0, 0), usage(busy, 1, 0, 0));

    for (int second = 5; second <= 60; second += 5) {
      advance(Duration.ofSeconds(5));
      proxy.report("edge", busy, 1, 0, 5);
    }

    assertThat(proxy.last(API).hasAbandonAction()).isTrue();
    assertThat(strategy(proxy.last(busy)).hasTokenBucket()).isTrue();
    assertThat(cluster.cluster().node(0).cluster().quotaOwner().buckets()).isEqualTo(1);
  }

  @Test
  void idleBucketOnASharedCounter_isAbandoned_theBusyOneKeepsTheCounter() {
    List<String> released = new CopyOnWriteArrayList<>();
    cluster =
        RlqsCluster.start(
            clock,
            1,
            YAML,
            SETTINGS,
            reports ->
                usage -> {
                  if (usage.released()) {
                    released.add(usage.key());
                  }
                  return reports.report(usage);
                });
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    BucketId busy = path("report-busy");
    BucketId idle = path("report-idle");
    proxy.report("edge", usage(busy, 1, 0, 0), usage(idle, 1, 0, 0));

    for (int second = 5; second <= 60; second += 5) {
      advance(Duration.ofSeconds(5));
      proxy.report("edge", usage(busy, 20, 0, 5), usage(idle, 0, 0, 5));
    }

    assertThat(proxy.last(idle).hasAbandonAction()).isTrue();
    assertThat(released).as("the busy bucket still counts on the counter").isEmpty();
    advance(Duration.ofSeconds(5));
    proxy.report("edge", busy, 20, 0, 5);
    assertThat(strategy(proxy.last(busy)).hasTokenBucket()).isTrue();
  }

  @Test
  void newBucketReportedAlone_theCountersNextUsageCoversTheLongestTimeOfItsBuckets() {
    List<dev.weir.core.quota.QuotaUsage> sent = new CopyOnWriteArrayList<>();
    cluster =
        RlqsCluster.start(
            clock,
            1,
            YAML,
            SETTINGS,
            reports ->
                usage -> {
                  sent.add(usage);
                  return reports.report(usage);
                });
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    BucketId a = path("report-a");
    BucketId b = path("report-b");
    proxy.report("edge", a, 1, 0, 0);
    advance(Duration.ofSeconds(5));
    proxy.report("edge", a, 50, 0, 5);
    advance(Duration.ofMillis(4_900));
    proxy.report("edge", b, 1, 0, 0);
    advance(Duration.ofMillis(100));
    proxy.report("edge", usage(a, 50, 0, 5), usage(b, 0, 0, 0));

    dev.weir.core.quota.QuotaUsage last = sent.get(sent.size() - 1);
    assertThat(last.allowed()).isEqualTo(50);
    assertThat(last.elapsedMillis()).as("a's 5 s since its own last report").isPositive();
    assertThat((last.allowed() + last.denied()) * 1000 / last.elapsedMillis())
        .as("requests a second: a's 10, not 50 over b's 0.1 s")
        .isLessThan(15);
  }

  @Test
  void firstReportsTimeElapsed_isBoundedToTheDayAnOwnerAccepts() {
    List<dev.weir.core.quota.QuotaUsage> sent = new CopyOnWriteArrayList<>();
    cluster =
        RlqsCluster.start(
            clock,
            1,
            YAML,
            SETTINGS,
            reports ->
                usage -> {
                  sent.add(usage);
                  return reports.report(usage);
                });
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    long day = Duration.ofDays(1).toMillis();

    proxy.report("edge", API, 1000, 0, 100_000);
    proxy.report("edge", TINY, 1, 0, Long.MAX_VALUE / 1000 + 1);
    proxy.report("edge", bucket("daily"), 1, 0, -5);
    proxy.report(
        "edge",
        usage(bucket("per-second"), 1, 0, 0).toBuilder()
            .setTimeElapsed(
                com.google.protobuf.Duration.newBuilder().setSeconds(2).setNanos(500_000_000))
            .build());

    assertThat(sent)
        .extracting(dev.weir.core.quota.QuotaUsage::elapsedMillis)
        .as("100 000 s, a product that overflows, a negative time, 2.5 s")
        .containsExactly(day, day, 0L, 2_500L);
  }

  @Test
  void firstReportClaimingMoreThanADay_onACounterAPeerOwns_isAssignedNotRefusedByThePeer() {
    cluster = RlqsCluster.start(clock, 2, YAML, SETTINGS);
    Proxy proxy = proxyOnANonOwnerOfApi();

    proxy.report("edge", API, 1000, 0, 100_000);

    assertThat(proxy.responses).as("the owner answered with a share").isNotEmpty();
    assertThat(strategy(proxy.last(API)).hasTokenBucket()).isTrue();
  }

  @Test
  void laterReportAfterMoreThanADaySilent_onACounterAPeerOwns_isAnsweredNotRefusedByThePeer() {
    List<dev.weir.core.quota.QuotaShare> shares = new CopyOnWriteArrayList<>();
    cluster =
        RlqsCluster.start(
            clock,
            2,
            YAML,
            SETTINGS,
            reports -> usage -> reports.report(usage).whenComplete((s, e) -> shares.add(s)));
    Proxy proxy = proxyOnANonOwnerOfApi();
    proxy.report("edge", API, 1, 0, 0);
    clock.advance(Duration.ofDays(1).plusMinutes(1));

    proxy.report("edge", API, 1, 0, 86_460);

    assertThat(shares).hasSize(2);
    assertThat(shares.get(1).isError())
        .as("the owner's answer to the second report: %s", shares.get(1))
        .isFalse();
    assertThat(strategy(proxy.last(API)).hasTokenBucket()).isTrue();
  }

  @Test
  void bucketBeyondWeirRlqsMaxBuckets_ofAShadowModeRule_isAllowedAll() {
    start(SETTINGS.withMaxBuckets(1));
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    proxy.report("edge", API, 1, 0, 0);

    proxy.report("edge", bucket("shadow"), 1, 0, 0);

    assertThat(strategy(proxy.last(bucket("shadow"))).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.ALLOW_ALL);
    assertThat(cluster.metrics().count("refused too_many_buckets")).isEqualTo(1);
  }

  /** Returns a proxy connected to a node that does not own the counter of {@code API}'s first policy. */
  private Proxy proxyOnANonOwnerOfApi() {
    BucketPlan.Limited plan =
        (BucketPlan.Limited)
            cluster
                .service(0)
                .planner()
                .plan(cluster.service(0).domainConfig("edge"), API.getBucketMap());
    String key = plan.policies().get(0).hashKey();
    int notOwner =
        cluster.cluster().nodes().indexOf(cluster.cluster().nonOwnersOf(key).get(0));
    return new Proxy(cluster.endpoints().get(notOwner));
  }

  private static BucketId user(int n) {
    return BucketId.newBuilder().putBucket("name", "per-user").putBucket("user", "u" + n).build();
  }

  private QuotaStream onlyStream() {
    List<QuotaStream> streams = cluster.service(0).streams();
    assertThat(streams).hasSize(1);
    return streams.get(0);
  }

  @Test
  void newBucketsBeyondWeirRlqsMaxBuckets_areNotHeld_limitedOnesAreDeniedAllAndCounted() {
    start(SETTINGS.withMaxBuckets(2_000));
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    int users = 0;

    for (int report = 0; report < 50; report++) {
      BucketQuotaUsage[] usages = new BucketQuotaUsage[1_000];
      for (int i = 0; i < usages.length; i++) {
        usages[i] = usage(user(users++), 1, 0, 0);
      }
      proxy.report("edge", usages);
      assertThat(onlyStream().heldBuckets())
          .as("after report %d", report)
          .isLessThanOrEqualTo(2_000);
    }

    List<BucketAction> last = proxy.responses.get(proxy.responses.size() - 1).getBucketActionList();
    assertThat(last).hasSize(1_000);
    assertThat(last)
        .allSatisfy(
            a ->
                assertThat(strategy(a).getBlanketRule())
                    .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL));
    assertThat(cluster.metrics().count("refused too_many_buckets")).isEqualTo(48_000);
    assertThat(cluster.cluster().node(0).cluster().quotaOwner().buckets()).isEqualTo(2_000);
  }

  /** Returns a bucket of the per-user rule whose user is {@code n}'s, 100 000 characters long. */
  private static BucketId hugeUser(int n) {
    return BucketId.newBuilder()
        .putBucket("name", "per-user")
        .putBucket("user", n + "x".repeat(100_000))
        .build();
  }

  private int heldOnTheNode() {
    return cluster.service(0).streams().stream().mapToInt(QuotaStream::heldBuckets).sum();
  }

  @Test
  void bucketsBeyondWeirRlqsMaxNodeBucketBytes_acrossStreams_areNotHeld_untilAStreamEnds()
      throws Exception {
    start(SETTINGS.withMaxNodeBucketBytes(1 << 20));
    Proxy first = new Proxy(cluster.endpoints().get(0));
    Proxy second = new Proxy(cluster.endpoints().get(0));
    ListAppender<ILoggingEvent> appender = rlqsLog();
    try {
      first.report("edge", IntStream.range(0, 6).mapToObj(i -> usage(hugeUser(i), 1, 0, 0))
          .toArray(BucketQuotaUsage[]::new));
      second.report("edge", IntStream.range(6, 12).mapToObj(i -> usage(hugeUser(i), 1, 0, 0))
          .toArray(BucketQuotaUsage[]::new));

      assertThat(heldOnTheNode()).as("buckets of 100 000 bytes held in 1 MiB").isEqualTo(10);
      assertThat(strategy(second.last(hugeUser(11))).getBlanketRule())
          .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);
      assertThat(cluster.metrics().count("refused too_many_buckets")).isEqualTo(2);
      assertThat(appender.list.stream().map(ILoggingEvent::getFormattedMessage))
          .anySatisfy(
              line ->
                  assertThat(line)
                      .contains("WEIR_RLQS_MAX_NODE_BUCKET_BYTES (1048576)")
                      .contains("a new bucket of 100"));

      first.out.onCompleted();
      Await.until(
          Duration.ofSeconds(10),
          () -> cluster.service(0).streams().size() == 1,
          "the first stream to end");
      second.report("edge", usage(hugeUser(11), 1, 0, 0));

      assertThat(strategy(second.last(hugeUser(11))).hasTokenBucket())
          .as("held once the first stream ended and freed its bytes")
          .isTrue();
    } finally {
      detach(appender);
    }
  }

  @Test
  void reportRacingItsStreamsEnd_holdsNoBucket() throws InterruptedException {
    start(SETTINGS);
    cluster.service(0).beforeBuckets(() -> onlyStream().close(Status.UNAVAILABLE));
    Proxy proxy = new Proxy(cluster.endpoints().get(0));

    proxy.out.onNext(
        RateLimitQuotaUsageReports.newBuilder()
            .setDomain("edge")
            .addBucketQuotaUsages(usage(API, 1, 0, 0))
            .addBucketQuotaUsages(usage(TINY, 1, 0, 0))
            .build());
    Await.until(
        Duration.ofSeconds(10),
        () -> cluster.service(0).stats().reportsReceived() == 1,
        "the report to be taken");

    assertThat(cluster.service(0).streams()).isEmpty();
    assertThat(cluster.service(0).heldBytes().held())
        .as("bytes held by a report taken after its stream ended")
        .isZero();
  }

  @Test
  void bucketBeyondWeirRlqsMaxBuckets_isHeldOnceIdleBucketsWereAbandoned() {
    start(SETTINGS.withMaxBuckets(1));
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    proxy.report("edge", API, 1, 0, 0);
    proxy.report("edge", TINY, 1, 0, 0);
    assertThat(strategy(proxy.last(TINY)).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);

    advance(Duration.ofSeconds(60));
    proxy.report("edge", TINY, 1, 0, 60);
    proxy.report("edge", TINY, 1, 0, 0);

    assertThat(proxy.last(API).hasAbandonAction()).isTrue();
    assertThat(strategy(proxy.last(TINY)).hasTokenBucket()).isTrue();
    assertThat(onlyStream().heldBuckets()).isEqualTo(1);
  }

  @Test
  void idleBuckets_areLookedForAtMostTwicePerReportInterval_notAtEveryReport() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    proxy.report("edge", API, 1, 0, 0);

    for (int i = 0; i < 24; i++) {
      advance(Duration.ofMillis(100));
      proxy.report("edge", user(i), 1, 0, 0);
    }
    assertThat(onlyStream().idleScans()).as("25 reports within 2.4 s").isEqualTo(1);

    advance(Duration.ofMillis(100));
    proxy.report("edge", API, 1, 0, 0);
    assertThat(onlyStream().idleScans()).as("2.5 s after the first").isEqualTo(2);
  }

  @Test
  void reload_removingTheRule_abandonsTheBucketAndReleasesTheProxysShare() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    proxy.report("edge", API, 1, 0, 0);
    assertThat(cluster.cluster().node(0).cluster().quotaOwner().buckets()).isEqualTo(1);

    cluster.reload(
        """
        domain: edge
        descriptors:
          - key: name
            value: tiny
            rate_limit: {unit: minute, requests_per_unit: 10}
        """);
    settle();

    assertThat(proxy.last().hasAbandonAction()).isTrue();
    assertThat(proxy.last().getBucketId()).isEqualTo(API);
    assertThat(cluster.cluster().node(0).cluster().quotaOwner().buckets()).isZero();
  }

  @Test
  void reload_raisingTheLimit_pushesALargerShare() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    proxy.report("edge", API, 1, 0, 0);
    int before = strategy(proxy.last()).getTokenBucket().getTokensPerFill().getValue();

    cluster.reload(YAML.replace("600}", "1200}"));
    settle();

    assertThat(strategy(proxy.last()).getTokenBucket().getTokensPerFill().getValue())
        .isGreaterThan(before * 3 / 2);
  }

  @Test
  void drain_endsEveryStreamReleasesItsSharesAndRefusesNewOnes() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    proxy.report("edge", API, 1, 0, 0);

    cluster.service(0).drain();
    settle();
    settleUntilEnded(proxy);

    assertThat(proxy.ended.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(proxy.ended.getDescription()).isEqualTo(RlqsService.DRAINING);
    assertThat(cluster.cluster().node(0).cluster().quotaOwner().buckets()).isZero();
    Proxy late = new Proxy(cluster.endpoints().get(0));
    late.out.onNext(RateLimitQuotaUsageReports.getDefaultInstance());
    late.sent++;
    settleUntilEnded(late);
    assertThat(late.ended.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
  }

  /** Returns the requests a second {@code bucket} fills at, as Envoy's filter computes it. */
  private static double fillRate(TokenBucket bucket) {
    return bucket.getTokensPerFill().getValue() / (double) bucket.getFillInterval().getSeconds();
  }

  @Test
  void dailyLimit_firstReportAtMidnight_isATokenBucketThatAdmitsAtTheDaysPace() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));

    proxy.report("edge", bucket("daily"), 1, 0, 0);

    RateLimitStrategy strategy = strategy(proxy.last());
    assertThat(strategy.hasTokenBucket()).as("a token bucket, not %s", strategy).isTrue();
    double pace = 1000 / 86_400.0;
    assertThat(fillRate(strategy.getTokenBucket())).isBetween(0.9 * pace, pace);
    assertThat(strategy.getTokenBucket().getMaxTokens()).isBetween(1, 5);
  }

  @Test
  void monthlyLimit_firstReportAtTheWindowsStart_isATokenBucketThatAdmitsAtTheWindowsPace() {
    long month = Duration.ofDays(30).toMillis();
    clock.advanceMillis(month - clock.wallMillis() % month);
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));

    proxy.report("edge", bucket("monthly"), 1, 0, 0);

    RateLimitStrategy strategy = strategy(proxy.last());
    assertThat(strategy.hasTokenBucket()).as("a token bucket, not %s", strategy).isTrue();
    double pace = 10_000 / (30 * 86_400.0);
    assertThat(fillRate(strategy.getTokenBucket())).isBetween(0.75 * pace, pace);
  }

  @Test
  void longFillIntervals_aChangeOfIntervalAloneIsVisibleToEnvoysComparison() {
    start(SETTINGS);
    Proxy one = new Proxy(cluster.endpoints().get(0));
    Proxy two = new Proxy(cluster.endpoints().get(0));
    one.report("edge", bucket("daily"), 1, 0, 0);
    TokenBucket alone = strategy(one.last()).getTokenBucket();

    two.report("edge", bucket("daily"), 1, 0, 0);
    advance(Duration.ofSeconds(5));
    one.report("edge", bucket("daily"), 0, 0, 5);
    TokenBucket shared = strategy(one.last()).getTokenBucket();

    assertThat(fillRate(shared)).isLessThan(0.75 * fillRate(alone));
    assertThat(
            shared.getMaxTokens() != alone.getMaxTokens()
                || shared.getTokensPerFill().getValue() != alone.getTokensPerFill().getValue()
                || shared.getFillInterval().getNanos() != alone.getFillInterval().getNanos())
        .as("Envoy 1.34 compares max_tokens, tokens_per_fill and the interval's nanos only")
        .isTrue();
  }

  @Test
  void perSecondLimit_maxTokensIsNoMoreThanTheLimit() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));

    proxy.report("edge", bucket("per-second"), 1, 0, 0);

    assertThat(strategy(proxy.last()).getTokenBucket().getMaxTokens())
        .as("Envoy starts the bucket full: a burst above the limit admits more than it in a second")
        .isBetween(1, 100);
  }

  @Test
  void shadowModeRule_overItsLimit_isAllowedAll() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    proxy.report("edge", bucket("shadow"), 1, 0, 0);
    assertThat(strategy(proxy.last()).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.ALLOW_ALL);
    advance(Duration.ofSeconds(5));

    proxy.report("edge", bucket("shadow"), 10, 1000, 5);

    assertThat(strategy(proxy.last()).hasTokenBucket()).isFalse();
    assertThat(strategy(proxy.last()).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.ALLOW_ALL);
  }

  @Test
  void globalShadowMode_spentWindow_isAllowedAll() {
    start(SETTINGS.withShadowMode(true));
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    proxy.report("edge", TINY, 1, 0, 0);
    advance(Duration.ofSeconds(5));

    proxy.report("edge", TINY, 9, 1000, 5);

    assertThat(strategy(proxy.last()).hasTokenBucket()).isFalse();
    assertThat(strategy(proxy.last()).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.ALLOW_ALL);
  }

  @Test
  void ownerUnreachable_aSpentWindowsDenyAllIsNotRenewedPastTheWindowsEnd() {
    AtomicBoolean down = new AtomicBoolean();
    cluster =
        RlqsCluster.start(
            clock,
            1,
            YAML,
            SETTINGS,
            reports ->
                usage ->
                    down.get()
                        ? CompletableFuture.completedFuture(QuotaShare.error("owner unreachable"))
                        : reports.report(usage));
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    proxy.report("edge", TINY, 1, 0, 0);
    advance(Duration.ofSeconds(5));
    proxy.report("edge", TINY, 9, 20, 5);
    assertThat(strategy(proxy.last()).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);
    down.set(true);
    proxy.report("edge", TINY, 0, 10, 0);
    assertThat(strategy(proxy.last()).getBlanketRule())
        .as("within the window, the held DENY_ALL is re-sent")
        .isEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);
    int seen = proxy.responses.size();

    clock.advance(Duration.ofSeconds(60));
    proxy.report("edge", TINY, 0, 10, 60);

    for (RateLimitQuotaResponse r : proxy.responses.subList(seen, proxy.responses.size())) {
      for (BucketAction a : r.getBucketActionList()) {
        assertThat(strategy(a).getBlanketRule())
            .as("the window ended 55 s ago; the owner gave no new share")
            .isNotEqualTo(RateLimitStrategy.BlanketRule.DENY_ALL);
      }
    }
    assertThat(proxy.ended).isNull();
  }

  @Test
  void unknownDomain_isCountedAsShouldRateLimitCountsIt() {
    start(SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));

    proxy.report("edg", API, 1, 0, 0);

    assertThat(strategy(proxy.last()).getBlanketRule())
        .isEqualTo(RateLimitStrategy.BlanketRule.ALLOW_ALL);
    assertThat(cluster.envoyRegistry().counter("weir.envoy.domain_not_found").count())
        .isEqualTo(1.0);
  }

  @Test
  void noConfigLoadedYet_aReportIsNotCountedAsAnUnknownDomain() {
    cluster = RlqsCluster.start(clock, 1, null, SETTINGS);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));

    proxy.report("d", API, 1, 0, 0);

    assertThat(strategy(proxy.last()).getBlanketRule())
        .as("assigned as unmatched, as before the config names the domain")
        .isEqualTo(RateLimitStrategy.BlanketRule.ALLOW_ALL);
    assertThat(cluster.envoyRegistry().counter("weir.envoy.domain_not_found").count())
        .as("ShouldRateLimit counts nothing while no config is loaded")
        .isZero();
  }

  @Test
  void streamOpenedWhileTheNodeStartsDraining_isEndedAtOnce() {
    start(SETTINGS);
    cluster.service(0).beforeRegister(() -> cluster.service(0).drain());

    Proxy late = new Proxy(cluster.endpoints().get(0));
    late.out.onNext(
        RateLimitQuotaUsageReports.newBuilder()
            .setDomain("edge")
            .addBucketQuotaUsages(usage(API, 1, 0, 0))
            .build());
    late.sent++;
    settleUntilEnded(late);

    assertThat(late.ended).as("the stream was ended").isNotNull();
    assertThat(late.ended.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(cluster.service(0).stats().streams()).isZero();
  }

  /**
   * Starts a one-node cluster whose usage reports, while {@code hold} is set and unless they
   * release a proxy, wait in {@code held} until each is run.
   */
  private RlqsCluster startHoldingUsages(AtomicBoolean hold, List<Runnable> held) {
    return RlqsCluster.start(
        clock,
        1,
        YAML,
        SETTINGS,
        reports ->
            usage -> {
              if (usage.released() || !hold.get()) {
                return reports.report(usage);
              }
              CompletableFuture<QuotaShare> share = new CompletableFuture<>();
              held.add(() -> reports.report(usage).thenAccept(share::complete));
              return share;
            });
  }

  @Test
  void streamEndingWhileAUsageIsInFlight_theOwnerStillForgetsTheProxy() throws Exception {
    AtomicBoolean hold = new AtomicBoolean();
    List<Runnable> held = new CopyOnWriteArrayList<>();
    cluster = startHoldingUsages(hold, held);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    proxy.report("edge", API, 1, 0, 0);
    hold.set(true);
    proxy.out.onNext(
        RateLimitQuotaUsageReports.newBuilder()
            .setDomain("edge")
            .addBucketQuotaUsages(usage(API, 5, 0, 5))
            .build());
    proxy.sent++;
    Await.until(Duration.ofSeconds(10), () -> held.size() == 1, "the usage to be held");

    proxy.out.onError(Status.CANCELLED.asRuntimeException());
    Await.until(
        Duration.ofSeconds(10),
        () -> cluster.service(0).stats().streams() == 0,
        "the cancelled stream to be forgotten");
    held.forEach(Runnable::run);
    settle();

    assertThat(cluster.cluster().node(0).cluster().quotaOwner().buckets())
        .as("the usage that reached the owner after the stream's release is released too")
        .isZero();
  }

  @Test
  void usageAnsweredAfterItsBucketCameBack_leavesTheOwnersRecordToTheNewCounter()
      throws Exception {
    AtomicBoolean hold = new AtomicBoolean();
    List<Runnable> held = new CopyOnWriteArrayList<>();
    cluster = startHoldingUsages(hold, held);
    Proxy proxy = new Proxy(cluster.endpoints().get(0));
    proxy.report("edge", API, 1, 0, 0);
    hold.set(true);
    sendUnsettled(proxy, usage(API, 5, 0, 5));
    Await.until(Duration.ofSeconds(10), () -> held.size() == 1, "the API usage to be held");
    hold.set(false);

    clock.advance(Duration.ofSeconds(61));
    sendUnsettled(proxy, usage(TINY, 1, 0, 0));
    Await.until(
        Duration.ofSeconds(10),
        () -> proxy.responses.size() == 3,
        "the idle API bucket's abandon and the answer to TINY");
    sendUnsettled(proxy, usage(API, 1, 0, 0));
    Await.until(
        Duration.ofSeconds(10),
        () -> proxy.responses.size() == 4,
        "the answer to the API bucket, subscribed again");
    held.forEach(Runnable::run);
    settle();

    assertThat(proxy.last(API).hasAbandonAction()).isFalse();
    assertThat(cluster.cluster().node(0).cluster().quotaOwner().buckets())
        .as("the old counter's late answer does not release the proxy the new counter reports as")
        .isEqualTo(2);
  }

  /** Sends one report of {@code usages} without waiting for the traffic to settle. */
  private static void sendUnsettled(Proxy proxy, BucketQuotaUsage... usages) {
    proxy.sent++;
    proxy.out.onNext(
        RateLimitQuotaUsageReports.newBuilder()
            .setDomain("edge")
            .addAllBucketQuotaUsages(List.of(usages))
            .build());
  }

  private static void settleUntilEnded(Proxy proxy) {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (proxy.ended == null && System.nanoTime() < deadline) {
      java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
    }
  }
}
