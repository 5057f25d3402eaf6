package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.Status;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.QuotaPush;
import dev.weir.proto.gubernator.QuotaShare;
import dev.weir.proto.gubernator.QuotaUsage;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.TokenBucketSnapshot;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Optional;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class PeerInputValidatorTest {

  private static final long NOW = 1_767_225_600_000L;
  private static final long SKEW = PeerInputValidator.MAX_CLOCK_SKEW.toMillis();
  private static final long CLIENT_SKEW = PeerInputValidator.MAX_CLIENT_CLOCK_SKEW.toMillis();
  private static final long YEAR = PeerInputValidator.GREGORIAN_SPAN_MILLIS;
  private static final String SELF = "10.0.0.1:1051";

  private final PeerInputValidator validator =
      new PeerInputValidator(new InputLimits(4 << 20, 4 << 20, 10, 20, 64, 1024), SELF);

  private static RateLimitRequest request() {
    return RateLimitRequest.builder("name", "key").limit(5).duration(60_000).createdAt(NOW).build();
  }

  @Test
  void checkClientCreatedAt_unsetOrAtTheSkewsEdges_validBeyond_errorNamingValueOffsetAndAllowed() {
    assertThat(CLIENT_SKEW).isEqualTo(240_000);
    assertThat(PeerInputValidator.checkClientCreatedAt(0, NOW)).isEmpty();
    assertThat(PeerInputValidator.checkClientCreatedAt(NOW - CLIENT_SKEW, NOW)).isEmpty();
    assertThat(PeerInputValidator.checkClientCreatedAt(NOW + CLIENT_SKEW, NOW)).isEmpty();
    assertThat(PeerInputValidator.checkClientCreatedAt(NOW + CLIENT_SKEW + 1, NOW))
        .contains(
            "field 'created_at' is "
                + (NOW + CLIENT_SKEW + 1)
                + ", "
                + (CLIENT_SKEW + 1)
                + " ms ahead of this node's clock ("
                + NOW
                + "); a caller's clock may differ from it by at most "
                + CLIENT_SKEW
                + " ms");
    assertThat(PeerInputValidator.checkClientCreatedAt(NOW - CLIENT_SKEW - 1, NOW))
        .contains(
            "field 'created_at' is "
                + (NOW - CLIENT_SKEW - 1)
                + ", "
                + (CLIENT_SKEW + 1)
                + " ms behind this node's clock ("
                + NOW
                + "); a caller's clock may differ from it by at most "
                + CLIENT_SKEW
                + " ms");
  }

  @Test
  void checkClientCreatedAt_atTheEdges_acceptedByAnOwnerWhoseClockIsOffByTheAllowance() {
    long allowance = PeerInputValidator.NODE_CLOCK_ALLOWANCE.toMillis();
    for (long createdAt : new long[] {NOW - CLIENT_SKEW, NOW + CLIENT_SKEW}) {
      assertThat(PeerInputValidator.checkClientCreatedAt(createdAt, NOW)).isEmpty();
      for (long ownerNow : new long[] {NOW - allowance, NOW + allowance}) {
        assertThat(validator.checkRequest(request().withCreatedAt(createdAt), ownerNow))
            .as("created_at %s, the owner's clock %s", createdAt, ownerNow)
            .isEmpty();
      }
    }
  }

  @Test
  void checkClientCreatedAt_anItemTheFrontDoorAccepts_anOwnerOneSecondOffAcceptsItToo() {
    for (long offset : new long[] {-SKEW, -SKEW + 500, -1, 0, 1, SKEW - 500, SKEW}) {
      long createdAt = NOW + offset;
      if (PeerInputValidator.checkClientCreatedAt(createdAt, NOW).isEmpty()) {
        for (long ownerNow : new long[] {NOW - 1_000, NOW + 1_000}) {
          assertThat(validator.checkRequest(request().withCreatedAt(createdAt), ownerNow))
              .as("created_at %s ms from the front door's clock, the owner's %s ms off", offset,
                  ownerNow - NOW)
              .isEmpty();
        }
      }
    }
  }

  static Stream<Arguments> requests() {
    return Stream.of(
        Arguments.of("valid", request(), null),
        Arguments.of("created_at unset", request().withCreatedAt(0), null),
        Arguments.of("created_at at the skew's edge", request().withCreatedAt(NOW - SKEW), null),
        Arguments.of(
            "created_at too old",
            request().withCreatedAt(NOW - SKEW - 1),
            "field 'created_at' is " + (NOW - SKEW - 1) + ", " + (SKEW + 1) + " ms behind"),
        Arguments.of(
            "created_at Long.MAX",
            request().withCreatedAt(Long.MAX_VALUE),
            "field 'created_at' is " + Long.MAX_VALUE),
        Arguments.of("created_at negative", request().withCreatedAt(-1), "field 'created_at'"),
        Arguments.of(
            "name too long",
            RateLimitRequest.builder("n".repeat(11), "k").build(),
            "field 'name' is 11 bytes long; at most 10"),
        Arguments.of(
            "key too long",
            RateLimitRequest.builder("n", "k".repeat(21)).build(),
            "field 'unique_key' is 21 bytes long; at most 20"),
        Arguments.of(
            "unknown behavior bit",
            request().withBehavior(64),
            "field 'behavior' has unknown flags 64"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("requests")
  void checkRequest_table(String name, RateLimitRequest request, String error) {
    assertError(validator.checkRequest(request, NOW), error);
  }

  private static BucketSnapshot token(UnaryOperator<TokenBucketSnapshot.Builder> change) {
    TokenBucketSnapshot.Builder t =
        TokenBucketSnapshot.newBuilder()
            .setLimit(5)
            .setDuration(60_000)
            .setRemaining(2)
            .setCreatedAt(NOW - 1000)
            .setExpireAt(NOW + 59_001);
    return BucketSnapshot.newBuilder().setKey("name_key").setTokenBucket(change.apply(t)).build();
  }

  static Stream<Arguments> snapshots() {
    long far = NOW + SKEW + 2 * 60_000 + 2;
    return Stream.of(
        Arguments.of("valid token bucket", token(t -> t), null),
        Arguments.of(
            "empty key",
            token(t -> t).toBuilder().setKey("").build(),
            "field 'key' cannot be empty"),
        Arguments.of(
            "key longer than name + key",
            token(t -> t).toBuilder().setKey("k".repeat(32)).build(),
            "field 'key' is 32 bytes long; at most 31"),
        Arguments.of(
            "no state",
            BucketSnapshot.newBuilder().setKey("name_key").build(),
            "the bucket carries no state"),
        Arguments.of(
            "negative limit", token(t -> t.setLimit(-1)), "field 'limit' cannot be negative"),
        Arguments.of(
            "negative duration",
            token(t -> t.setDuration(-5)),
            "field 'duration' cannot be negative"),
        Arguments.of(
            "refunded token bucket: remaining above the limit",
            token(t -> t.setRemaining(6)),
            null),
        Arguments.of(
            "refunded token bucket: remaining Long.MAX",
            token(t -> t.setRemaining(Long.MAX_VALUE)),
            null),
        Arguments.of(
            "negative remaining",
            token(t -> t.setRemaining(-1)),
            "field 'remaining' cannot be negative, got -1"),
        Arguments.of(
            "remaining Long.MIN",
            token(t -> t.setRemaining(Long.MIN_VALUE)),
            "field 'remaining' cannot be negative, got " + Long.MIN_VALUE),
        Arguments.of("unknown status", token(t -> t.setStatusValue(7)), "field 'status' is 7"),
        Arguments.of(
            "created in the future",
            token(t -> t.setCreatedAt(NOW + SKEW + 1)),
            "field 'created_at' is " + (NOW + SKEW + 1) + ", " + (SKEW + 1) + " ms ahead of"),
        Arguments.of(
            "expires Long.MAX",
            token(t -> t.setExpireAt(Long.MAX_VALUE)),
            "field 'expire_at' is " + Long.MAX_VALUE),
        Arguments.of(
            "expires beyond two windows", token(t -> t.setExpireAt(far)), "field 'expire_at' is "),
        Arguments.of(
            "Gregorian code duration may last a year",
            token(t -> t.setDuration(5).setExpireAt(NOW + 300L * 24 * 3600 * 1000)),
            null),
        Arguments.of(
            "huge duration may end late",
            token(t -> t.setDuration(Long.MAX_VALUE / 2).setExpireAt(Long.MAX_VALUE)),
            null),
        Arguments.of(
            "valid leaky bucket",
            snapshot(new LeakyBucketState(10, 1000, 20, 19, NOW, NOW + 1001)),
            null),
        Arguments.of(
            "leaky bucket slightly in debt",
            snapshot(new LeakyBucketState(10, 1000, 20, -3, NOW, NOW + 1001)),
            null),
        Arguments.of(
            "leaky bucket deeper in debt than a limit",
            snapshot(new LeakyBucketState(10, 1000, 20, -11, NOW, NOW + 1001)),
            "field 'remaining' is -11; the engine keeps it at -limit (-10) or above"),
        Arguments.of(
            "refunded leaky bucket above its burst",
            snapshot(new LeakyBucketState(10, 1000, 20, Long.MAX_VALUE, NOW, NOW + 1001)),
            null),
        Arguments.of(
            "negative burst",
            snapshot(new LeakyBucketState(10, 1000, -1, 0, NOW, NOW + 1001)),
            "field 'burst' cannot be negative"),
        Arguments.of(
            "valid fixed window",
            snapshot(new FixedWindowState(10, 1000, NOW, 11, NOW + 1000)),
            null),
        Arguments.of(
            "refunded fixed window: count below zero",
            snapshot(new FixedWindowState(10, 1000, NOW, Long.MIN_VALUE, NOW + 1000)),
            null),
        Arguments.of(
            "fixed window of a negative limit",
            snapshot(new FixedWindowState(-10, 1000, NOW, 1, NOW + 1000)),
            "field 'limit' cannot be negative"),
        Arguments.of(
            "window starts in the future",
            snapshot(new FixedWindowState(10, 1000, Long.MAX_VALUE, 1, NOW + 1000)),
            "field 'window_start' is " + Long.MAX_VALUE),
        Arguments.of(
            "valid sliding window",
            snapshot(new SlidingWindowState(10, 1000, NOW, 4, 5, NOW + 2000)),
            null),
        Arguments.of(
            "yearly sliding window kept to the end of next year",
            snapshot(
                new SlidingWindowState(10, 5, NOW, 4, 5, NOW + 2 * 365L * 24 * 3600 * 1000)),
            null),
        Arguments.of(
            "sliding window ending past two leap years",
            snapshot(new SlidingWindowState(10, 5, NOW, 4, 5, NOW + SKEW + 2 * YEAR + 1)),
            "field 'expire_at' is "),
        Arguments.of(
            "yearly fixed window ending past one leap year",
            snapshot(new FixedWindowState(10, 5, NOW, 4, NOW + SKEW + YEAR + 1)),
            "field 'expire_at' is "),
        Arguments.of(
            "refunded sliding window: counts below zero",
            snapshot(new SlidingWindowState(10, 1000, NOW, -4, Long.MIN_VALUE, NOW + 2000)),
            null),
        Arguments.of(
            "refunded sliding window starting in the future",
            snapshot(new SlidingWindowState(10, 1000, NOW + SKEW + 1, -4, -5, NOW + 2000)),
            "field 'window_start' is " + (NOW + SKEW + 1)));
  }

  private static BucketSnapshot snapshot(dev.weir.core.engine.BucketState state) {
    return PeerProtos.toSnapshot("name_key", state);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("snapshots")
  void checkSnapshot_table(String name, BucketSnapshot snapshot, String error) {
    assertError(validator.checkSnapshot(snapshot, NOW), error);
  }

  private static UpdatePeerGlobal global(UnaryOperator<UpdatePeerGlobal.Builder> change) {
    UpdatePeerGlobal.Builder g =
        UpdatePeerGlobal.newBuilder()
            .setKey("name_key")
            .setAlgorithmValue(0)
            .setDuration(60_000)
            .setCreatedAt(NOW)
            .setStatus(
                RateLimitResp.newBuilder().setLimit(5).setRemaining(4).setResetTime(NOW + 60_000));
    return change.apply(g).build();
  }

  static Stream<Arguments> globals() {
    BucketSnapshot state =
        PeerProtos.toSnapshot(
            "name_key", new TokenBucketState(Status.UNDER_LIMIT, 5, 60_000, 4, NOW, NOW + 60_001));
    return Stream.of(
        Arguments.of("valid", global(g -> g), null),
        Arguments.of("valid with exact state", global(g -> g.setWeirState(state)), null),
        Arguments.of("empty key", global(g -> g.setKey("")), "field 'key' cannot be empty"),
        Arguments.of(
            "unknown algorithm",
            global(g -> g.setAlgorithmValue(9)),
            "field 'algorithm' is 9; known are 0 to 3"),
        Arguments.of(
            "negative duration",
            global(g -> g.setDuration(Long.MIN_VALUE)),
            "field 'duration' cannot be negative"),
        Arguments.of(
            "created long ago",
            global(g -> g.setCreatedAt(1)),
            "field 'created_at' is 1, " + (NOW - 1) + " ms behind"),
        Arguments.of(
            "refunded: remaining above limit without state (a Gubernator owner)",
            global(g -> g.setStatus(g.getStatus().toBuilder().setRemaining(Long.MAX_VALUE))),
            null),
        Arguments.of(
            "refunded: remaining above limit with exact state",
            global(
                g ->
                    g.setStatus(g.getStatus().toBuilder().setRemaining(25))
                        .setWeirState(
                            state.toBuilder()
                                .setTokenBucket(
                                    state.getTokenBucket().toBuilder().setRemaining(25)))),
            null),
        Arguments.of(
            "negative remaining",
            global(g -> g.setStatus(g.getStatus().toBuilder().setRemaining(-1))),
            "field 'status.remaining' cannot be negative"),
        Arguments.of(
            "reset time Long.MAX",
            global(g -> g.setStatus(g.getStatus().toBuilder().setResetTime(Long.MAX_VALUE))),
            "field 'status.reset_time' is " + Long.MAX_VALUE),
        Arguments.of(
            "state of another key",
            global(g -> g.setWeirState(state.toBuilder().setKey("other"))),
            "field 'weir_state.key' differs from field 'key'"),
        Arguments.of(
            "garbage state",
            global(
                g ->
                    g.setWeirState(
                        state.toBuilder()
                            .setTokenBucket(
                                state.getTokenBucket().toBuilder().setRemaining(Long.MIN_VALUE)))),
            "weir_state: field 'remaining' cannot be negative, got " + Long.MIN_VALUE));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("globals")
  void checkGlobal_table(String name, UpdatePeerGlobal global, String error) {
    assertError(validator.checkGlobal(global, NOW), error);
  }

  static Stream<Arguments> announcements() {
    return Stream.of(
        Arguments.of("another member", "10.0.0.2:1051", null),
        Arguments.of("IPv6 member", "[fd00::2]:1051", null),
        Arguments.of("this node", SELF, "field 'address' names this node (" + SELF + ")"),
        Arguments.of("empty", "", "field 'address' cannot be empty"),
        Arguments.of("no port", "10.0.0.2", "field 'address' is not host:port: missing ':port'"),
        Arguments.of(
            "too long",
            "h".repeat(600) + ":1",
            "field 'address' is 602 characters long; at most 512"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("announcements")
  void checkAnnounce_table(String name, String address, String error) {
    assertError(
        validator.checkAnnounce(
            AnnounceReq.newBuilder().setAddress(address).setLeaving(true).build()),
        error);
  }

  private static QuotaUsage usage(UnaryOperator<QuotaUsage.Builder> change) {
    QuotaUsage.Builder u =
        QuotaUsage.newBuilder()
            .setRule(
                RateLimitReq.newBuilder()
                    .setName("rlqs/n")
                    .setUniqueKey("k=v")
                    .setLimit(600)
                    .setDuration(60_000)
                    .setAlgorithmValue(2))
            .setClient("10.0.0.2:1051/1767225600000.1")
            .setAllowed(40)
            .setDenied(2)
            .setElapsedMs(5000)
            .setIntervalMs(5000);
    return change.apply(u).build();
  }

  static Stream<Arguments> quotaUsages() {
    return Stream.of(
        Arguments.of("valid", usage(u -> u), null),
        Arguments.of("first report", usage(u -> u.setElapsedMs(0)), null),
        Arguments.of("no rule", usage(QuotaUsage.Builder::clearRule), "field 'rule' is required"),
        Arguments.of(
            "rule with an unknown algorithm",
            usage(u -> u.setRule(u.getRule().toBuilder().setAlgorithmValue(9))),
            "rule: "),
        Arguments.of(
            "rule with an over-long key",
            usage(u -> u.setRule(u.getRule().toBuilder().setUniqueKey("k".repeat(2000)))),
            "field 'unique_key' is 2000 bytes long"),
        Arguments.of("no client", usage(u -> u.setClient("")), "field 'client' cannot be empty"),
        Arguments.of(
            "over-long client",
            usage(u -> u.setClient("c".repeat(600))),
            "field 'client' is 600 characters long; at most 576"),
        Arguments.of("negative allowed", usage(u -> u.setAllowed(-1)), "field 'allowed' is -1"),
        Arguments.of(
            "absurd denied", usage(u -> u.setDenied(Long.MAX_VALUE)), "field 'denied' is "),
        Arguments.of(
            "elapsed over a day", usage(u -> u.setElapsedMs(90_000_000)), "field 'elapsed_ms'"),
        Arguments.of(
            "interval under 100 ms", usage(u -> u.setIntervalMs(10)), "field 'interval_ms' is 10"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("quotaUsages")
  void checkQuotaUsage_table(String name, QuotaUsage usage, String error) {
    assertError(validator.checkQuotaUsage(usage, NOW), error);
  }

  private static QuotaPush push(UnaryOperator<QuotaShare.Builder> change) {
    return QuotaPush.newBuilder()
        .setKey("rlqs/r_k")
        .setClient("10.0.0.1:1051/1.1")
        .setShare(
            change.apply(
                QuotaShare.newBuilder()
                    .setMillirequestsPerSecond(12_500)
                    .setBurst(13)
                    .setEpoch(NOW - 1000)
                    .setSequence(4)))
        .build();
  }

  static Stream<Arguments> quotaPushes() {
    return Stream.of(
        Arguments.of("valid", push(s -> s), null),
        Arguments.of(
            "spent window", push(s -> s.setMillirequestsPerSecond(0).setSpentUntil(NOW + 1)), null),
        Arguments.of(
            "with an error", push(s -> s.setError("x")), "field 'share.error' must be empty"),
        Arguments.of(
            "negative rate",
            push(s -> s.setMillirequestsPerSecond(-5)),
            "field 'share.millirequests_per_second' is -5"),
        Arguments.of(
            "epoch from the future",
            push(s -> s.setEpoch(NOW + 3_600_000)),
            "field 'share.epoch' is "),
        Arguments.of(
            "spent for ten years",
            push(s -> s.setSpentUntil(NOW + 10L * 365 * 86_400_000)),
            "field 'share.spent_until' is "),
        Arguments.of(
            "negative sequence", push(s -> s.setSequence(-1)), "field 'share.sequence' cannot be"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("quotaPushes")
  void checkQuotaPush_table(String name, QuotaPush push, String error) {
    assertError(validator.checkQuotaPush(push, NOW), error);
  }

  @Test
  void checkQuotaPush_emptyKeyOrClient_refused() {
    assertError(
        validator.checkQuotaPush(push(s -> s).toBuilder().setKey("").build(), NOW),
        "field 'key' cannot be empty");
    assertError(
        validator.checkQuotaPush(push(s -> s).toBuilder().setClient("").build(), NOW),
        "field 'client' cannot be empty");
  }

  @Test
  void checkRequest_noSelfGiven_anyAddressAnnounceable() {
    PeerInputValidator anonymous = new PeerInputValidator(InputLimits.DEFAULTS, "");

    assertThat(anonymous.checkAnnounce(AnnounceReq.newBuilder().setAddress(SELF).build()))
        .isEmpty();
  }

  static Stream<Arguments> callersOwn() throws Exception {
    InetSocketAddress v4 = new InetSocketAddress(InetAddress.getByName("10.0.0.7"), 40_000);
    InetSocketAddress mapped =
        new InetSocketAddress(
            InetAddress.getByAddress(
                new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, 10, 0, 0, 7}),
            40_000);
    InetSocketAddress v6 = new InetSocketAddress(InetAddress.getByName("fd00::5"), 40_000);
    InetSocketAddress linkLocal =
        new InetSocketAddress(
            Inet6Address.getByAddress(
                null, InetAddress.getByName("fe80::1").getAddress(), 2),
            40_000);
    return Stream.of(
        Arguments.of("same IPv4", "10.0.0.7:1051", v4, true),
        Arguments.of("IPv4-mapped caller", "10.0.0.7:1051", mapped, true),
        Arguments.of("IPv4-mapped address", "[::ffff:10.0.0.7]:1051", v4, true),
        Arguments.of("same IPv6, other spelling", "[FD00:0:0::5]:1051", v6, true),
        Arguments.of("zone ids", "[fe80::1%eth0]:1051", linkLocal, true),
        Arguments.of("other IPv4", "10.0.0.8:1051", v4, false),
        Arguments.of("IPv4 against IPv6", "10.0.0.7:1051", v6, false),
        Arguments.of("host name, never looked up", "localhost:1051", v4, false),
        Arguments.of("in-process caller", "10.0.0.7:1051", new SocketAddress() {}, false),
        Arguments.of("no caller", "10.0.0.7:1051", null, false));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("callersOwn")
  void checkCallersOwn_table(String name, String address, SocketAddress caller, boolean own) {
    Optional<String> error = PeerInputValidator.checkCallersOwn(address, caller);

    if (own) {
      assertThat(error).isEmpty();
    } else {
      assertThat(error)
          .hasValueSatisfying(
              e ->
                  assertThat(e)
                      .startsWith("field 'address' is '" + address + "', which discovery does not list")
                      .contains("may only ask for a copy to itself"));
    }
  }

  @Test
  void checkCallersOwn_otherIp_namesTheCallersIp() throws Exception {
    assertThat(
            PeerInputValidator.checkCallersOwn(
                "10.0.0.8:1051", new InetSocketAddress(InetAddress.getByName("10.0.0.7"), 4)))
        .hasValue(
            "field 'address' is '10.0.0.8:1051', which discovery does not list, and its host is not"
                + " the caller's IP (the notice came from 10.0.0.7); a node discovery does not list"
                + " may only ask for a copy to itself, naming the IP it calls from");
  }

  private static void assertError(Optional<String> actual, String expectedPrefix) {
    if (expectedPrefix == null) {
      assertThat(actual).isEmpty();
    } else {
      assertThat(actual).hasValueSatisfying(e -> assertThat(e).startsWith(expectedPrefix));
    }
  }
}
