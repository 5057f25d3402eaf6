package dev.weir.core.cluster.peer;

import dev.weir.core.config.HostPort;
import dev.weir.core.config.IpText;
import dev.weir.core.engine.RequestValidator;
import dev.weir.core.engine.SaturatingMath;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.FixedWindowSnapshot;
import dev.weir.proto.gubernator.LeakyBucketSnapshot;
import dev.weir.proto.gubernator.QuotaPush;
import dev.weir.proto.gubernator.QuotaShare;
import dev.weir.proto.gubernator.QuotaUsage;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.SlidingWindowSnapshot;
import dev.weir.proto.gubernator.TokenBucketSnapshot;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The checks of what a peer sends, as strict as those of client input: every key must be one a
 * client could have made (not empty, within {@code WEIR_MAX_NAME_LENGTH} and {@code
 * WEIR_MAX_KEY_LENGTH}), every number one the engine can produce, every timestamp within {@link
 * #MAX_CLOCK_SKEW} of this node's clock (or, for the end of a bucket, within its lifetime after
 * that), every address a {@code host:port}. Each method returns the first error of one item, or
 * empty when it is valid.
 *
 * <p>A bucket's count has no bound on the side a refund moves it: negative hits (Gubernator's
 * refunds) raise {@code remaining} above the limit, without cap, and take a window's counts below
 * zero, and such a state is the owner's to broadcast and hand over like any other. A peer holding
 * the credentials can refund a key anyway, by forwarding negative hits to its owner; refusing the
 * state would only leave the other nodes' copies behind.
 *
 * <p>Pure: the caller passes the time ({@code now}, epoch milliseconds).
 */
public final class PeerInputValidator {

  /**
   * The most a timestamp a peer sends may lie ahead of (or, for the time a request was made,
   * behind) this node's clock: 5 minutes, the clock skew Kerberos tolerates.
   */
  public static final Duration MAX_CLOCK_SKEW = Duration.ofMinutes(5);

  /**
   * The most the clocks of two nodes are taken to differ by: 1 minute, kept out of the {@code
   * created_at} a client may send, so that an item one node accepts from a client is not refused by
   * the owner it is forwarded to.
   */
  public static final Duration NODE_CLOCK_ALLOWANCE = Duration.ofMinutes(1);

  /**
   * The most a client's {@code created_at} may lie from the clock of the node it asks: {@link
   * #MAX_CLOCK_SKEW} less {@link #NODE_CLOCK_ALLOWANCE}, 4 minutes.
   */
  public static final Duration MAX_CLIENT_CLOCK_SKEW = MAX_CLOCK_SKEW.minus(NODE_CLOCK_ALLOWANCE);

  /** The longest address (the sender's or a member's {@code host:port}) a peer may send. */
  public static final int MAX_ADDRESS_LENGTH = 512;

  /** The longest quota client name (a stream node's address, {@code /} and a stream's name). */
  public static final int MAX_CLIENT_LENGTH = MAX_ADDRESS_LENGTH + 64;

  /** The most requests one quota usage report may count, allowed or denied: 2^50. */
  public static final long MAX_REPORTED_REQUESTS = 1L << 50;

  /** The longest time one quota usage report may cover: a day. */
  public static final long MAX_REPORT_SPAN_MILLIS =
      dev.weir.core.quota.QuotaUsage.MAX_ELAPSED_MILLIS;

  /** The shortest report interval a quota usage may name: 100 ms, as Envoy's filter allows. */
  public static final long MIN_REPORT_INTERVAL_MILLIS = 100;

  /** The longest report interval a quota usage may name: an hour. */
  public static final long MAX_REPORT_INTERVAL_MILLIS = Duration.ofHours(1).toMillis();

  /** The largest quota share rate a peer may push, in thousandths of a request per second: 2^50. */
  public static final long MAX_QUOTA_MILLI_RATE = 1L << 50;

  /** The largest Gregorian duration code ({@code YEARS}); a duration up to it may be one. */
  static final long MAX_GREGORIAN_CODE = GregorianInterval.YEARS.code();

  /** The longest window a Gregorian duration code names: a leap year. */
  static final long GREGORIAN_SPAN_MILLIS = Duration.ofDays(366).toMillis();

  private static final long SKEW = MAX_CLOCK_SKEW.toMillis();

  private static final long CLIENT_SKEW = MAX_CLIENT_CLOCK_SKEW.toMillis();

  private final InputLimits limits;
  private final String self;

  /**
   * Creates the checks with the key lengths of {@code limits}, for the node whose advertised
   * address is {@code self} (an announcement naming it is refused; empty checks no address).
   */
  public PeerInputValidator(InputLimits limits, String self) {
    this.limits = Objects.requireNonNull(limits, "limits");
    this.self = Objects.requireNonNull(self, "self");
  }

  /**
   * Checks a forwarded item beyond what the engine checks: the lengths of {@code name} and {@code
   * unique_key}, the behavior flags, and {@code created_at} (0 = unset, or within the skew of
   * {@code now}).
   */
  public Optional<String> checkRequest(RateLimitRequest request, long now) {
    Optional<String> tooLong = limits.checkItem(request);
    if (tooLong.isPresent()) {
      return tooLong;
    }
    if ((request.behavior() & ~Behavior.KNOWN) != 0) {
      return error(
          "field 'behavior' has unknown flags "
              + (request.behavior() & ~Behavior.KNOWN)
              + "; the known flags add up to at most "
              + Behavior.KNOWN);
    }
    if (request.createdAt() != 0) {
      return timestamp("created_at", request.createdAt(), now, now);
    }
    return Optional.empty();
  }

  /**
   * Checks the {@code created_at} of a client's item: 0 (unset) or within {@link
   * #MAX_CLIENT_CLOCK_SKEW} of {@code now}, so that its hits and the state they make reach every
   * node whose clock is within {@link #NODE_CLOCK_ALLOWANCE} of this one's, which refuses a time
   * more than {@link #MAX_CLOCK_SKEW} off from a peer.
   */
  public static Optional<String> checkClientCreatedAt(long createdAt, long now) {
    if (createdAt == 0) {
      return Optional.empty();
    }
    return timestamp(
        "created_at",
        createdAt,
        now,
        now,
        CLIENT_SKEW,
        "a caller's clock may differ from it by at most ");
  }

  /** Checks one GLOBAL broadcast item: key, algorithm, duration, times, status and exact state. */
  public Optional<String> checkGlobal(UpdatePeerGlobal global, long now) {
    Optional<String> error = checkKey("key", global.getKey());
    if (error.isPresent()) {
      return error;
    }
    if (Algorithm.forNumber(global.getAlgorithmValue()).isEmpty()) {
      return error("field 'algorithm' is " + global.getAlgorithmValue() + "; known are 0 to 3");
    }
    if (global.getDuration() < 0) {
      return negative("duration", global.getDuration());
    }
    if (global.getCreatedAt() != 0) {
      error = timestamp("created_at", global.getCreatedAt(), now, now);
      if (error.isPresent()) {
        return error;
      }
    }
    RateLimitResp status = global.getStatus();
    if (status.getLimit() < 0) {
      return negative("status.limit", status.getLimit());
    }
    if (status.getRemaining() < 0) {
      return negative("status.remaining", status.getRemaining());
    }
    if (status.getStatusValue() != 0 && status.getStatusValue() != 1) {
      return error("field 'status.status' is " + status.getStatusValue() + "; known are 0 and 1");
    }
    error = end("status.reset_time", status.getResetTime(), now, global.getDuration());
    if (error.isPresent()) {
      return error;
    }
    if (!global.hasWeirState()) {
      return Optional.empty();
    }
    if (!global.getWeirState().getKey().equals(global.getKey())) {
      return error("field 'weir_state.key' differs from field 'key'");
    }
    return checkSnapshot(global.getWeirState(), now).map(e -> "weir_state: " + e);
  }

  /** Checks one bucket's state as the engine could have left it, and its key. */
  public Optional<String> checkSnapshot(BucketSnapshot snapshot, long now) {
    Optional<String> error = checkKey("key", snapshot.getKey());
    if (error.isPresent()) {
      return error;
    }
    return switch (snapshot.getStateCase()) {
      case TOKEN_BUCKET -> tokenBucket(snapshot.getTokenBucket(), now);
      case LEAKY_BUCKET -> leakyBucket(snapshot.getLeakyBucket(), now);
      case FIXED_WINDOW -> fixedWindow(snapshot.getFixedWindow(), now);
      case SLIDING_WINDOW -> slidingWindow(snapshot.getSlidingWindow(), now);
      case STATE_NOT_SET -> error("the bucket carries no state");
    };
  }

  /**
   * Checks one quota usage: its rule as a forwarded item (key lengths, behavior flags, and what the
   * engine requires of limit, duration and algorithm), its client's name, its counts (0 to {@link
   * #MAX_REPORTED_REQUESTS}), the time it covers (0 to a day) and its report interval (100 ms to an
   * hour).
   */
  public Optional<String> checkQuotaUsage(QuotaUsage usage, long now) {
    if (!usage.hasRule()) {
      return error("field 'rule' is required");
    }
    RateLimitRequest rule = PeerProtos.fromProto(usage.getRule());
    Optional<String> error =
        first(checkRequest(rule, now), RequestValidator.validate(rule).map(e -> "rule: " + e));
    if (error.isPresent()) {
      return error;
    }
    return first(
        checkClient(usage.getClient()),
        within("allowed", usage.getAllowed(), 0, MAX_REPORTED_REQUESTS),
        within("denied", usage.getDenied(), 0, MAX_REPORTED_REQUESTS),
        within("elapsed_ms", usage.getElapsedMs(), 0, MAX_REPORT_SPAN_MILLIS),
        within(
            "interval_ms",
            usage.getIntervalMs(),
            MIN_REPORT_INTERVAL_MILLIS,
            MAX_REPORT_INTERVAL_MILLIS));
  }

  /**
   * Checks one pushed quota share: its bucket key and client as in a usage, and a share the owner
   * could have made: no error, a rate and burst within bounds, a spent window ending within a year
   * of now, an epoch not ahead of this node's clock by more than the skew.
   */
  public Optional<String> checkQuotaPush(QuotaPush push, long now) {
    Optional<String> error = first(checkKey("key", push.getKey()), checkClient(push.getClient()));
    if (error.isPresent()) {
      return error;
    }
    if (!push.hasShare()) {
      return error("field 'share' is required");
    }
    QuotaShare share = push.getShare();
    if (!share.getError().isEmpty()) {
      return error("field 'share.error' must be empty in a pushed share");
    }
    return first(
        within(
            "share.millirequests_per_second",
            share.getMillirequestsPerSecond(),
            0,
            MAX_QUOTA_MILLI_RATE),
        within("share.burst", share.getBurst(), 0, MAX_QUOTA_MILLI_RATE),
        within(
            "share.spent_until",
            share.getSpentUntil(),
            0,
            SaturatingMath.add(SaturatingMath.add(now, SKEW), GREGORIAN_SPAN_MILLIS)),
        timestamp("share.epoch", share.getEpoch(), 0, now),
        share.getSequence() < 0
            ? negative("share.sequence", share.getSequence())
            : Optional.empty());
  }

  /** Checks a quota client's name: not empty, at most {@link #MAX_CLIENT_LENGTH} characters. */
  private static Optional<String> checkClient(String client) {
    if (client.isEmpty()) {
      return error("field 'client' cannot be empty");
    }
    if (client.length() > MAX_CLIENT_LENGTH) {
      return error(
          "field 'client' is "
              + client.length()
              + " characters long; at most "
              + MAX_CLIENT_LENGTH
              + " are allowed");
    }
    return Optional.empty();
  }

  /**
   * Checks a membership notice: its {@code address} is a {@code host:port} and not this node's own
   * (a peer speaks for itself, not for the receiver).
   */
  public Optional<String> checkAnnounce(AnnounceReq announce) {
    Optional<String> error = checkAddress("address", announce.getAddress());
    if (error.isPresent()) {
      return error;
    }
    if (announce.getAddress().equals(self)) {
      return error(
          "field 'address' names this node ("
              + self
              + "); a peer can only announce its own leaving or return");
    }
    return Optional.empty();
  }

  /**
   * Checks that {@code address}, a valid {@code host:port} ({@link #checkAnnounce}) that discovery
   * does not list, is the caller's own: its host is an IP literal (a zone id is ignored) equal to
   * the IP of {@code caller}, the remote address of the call that names it (null, or not an IP
   * socket address as over an in-process transport: unknown, so never equal). IPv4 and its
   * IPv4-mapped IPv6 form are the same IP.
   */
  public static Optional<String> checkCallersOwn(String address, SocketAddress caller) {
    String host = HostPort.parse(address).host();
    int zone = host.indexOf('%');
    Optional<InetAddress> named = IpText.literal(zone < 0 ? host : host.substring(0, zone));
    Optional<InetAddress> from = ipOf(caller);
    if (named.isPresent() && from.isPresent() && named.get().equals(from.get())) {
      return Optional.empty();
    }
    return error(
        "field 'address' is '"
            + address
            + "', which discovery does not list, and "
            + (named.isEmpty() ? "its host is not an IP literal" : "its host is not the caller's IP")
            + " (the notice came from "
            + from.map(IpText::of).orElse("no IP: " + caller)
            + "); a node discovery does not list may only ask for a copy to itself, naming the IP"
            + " it calls from");
  }

  /** Returns the IP of {@code address} without its zone, IPv4-mapped IPv6 as IPv4. */
  private static Optional<InetAddress> ipOf(SocketAddress address) {
    if (!(address instanceof InetSocketAddress inet) || inet.getAddress() == null) {
      return Optional.empty();
    }
    try {
      return Optional.of(InetAddress.getByAddress(inet.getAddress().getAddress()));
    } catch (UnknownHostException e) {
      return Optional.empty();
    }
  }

  /** Checks that {@code value} of {@code field} is a {@code host:port} of sane length. */
  public Optional<String> checkAddress(String field, String value) {
    if (value.isEmpty()) {
      return error("field '" + field + "' cannot be empty");
    }
    if (value.length() > MAX_ADDRESS_LENGTH) {
      return error(
          "field '"
              + field
              + "' is "
              + value.length()
              + " characters long; at most "
              + MAX_ADDRESS_LENGTH
              + " are allowed");
    }
    try {
      HostPort.parse(value);
    } catch (IllegalArgumentException e) {
      return error("field '" + field + "' is not host:port: " + e.getMessage());
    }
    return Optional.empty();
  }

  /**
   * Checks a bucket key ({@code name + "_" + unique_key}): not empty, and at most as long as the
   * longest name and key a client may send, joined.
   */
  Optional<String> checkKey(String field, String key) {
    if (key.isEmpty()) {
      return error("field '" + field + "' cannot be empty");
    }
    int max = limits.maxNameBytes() + 1 + limits.maxKeyBytes();
    if (key.length() > max / 3) {
      int bytes = key.getBytes(StandardCharsets.UTF_8).length;
      if (bytes > max) {
        return error(
            "field '"
                + field
                + "' is "
                + bytes
                + " bytes long; at most "
                + max
                + " are allowed (WEIR_MAX_NAME_LENGTH + 1 + WEIR_MAX_KEY_LENGTH)");
      }
    }
    return Optional.empty();
  }

  private Optional<String> tokenBucket(TokenBucketSnapshot t, long now) {
    return first(
        config(t.getLimit(), t.getDuration(), 0),
        t.getStatusValue() == 0 || t.getStatusValue() == 1
            ? Optional.empty()
            : error("field 'status' is " + t.getStatusValue() + "; known are 0 and 1"),
        t.getRemaining() < 0 ? negative("remaining", t.getRemaining()) : Optional.empty(),
        timestamp("created_at", t.getCreatedAt(), 0, now),
        end("expire_at", t.getExpireAt(), now, t.getDuration()));
  }

  private Optional<String> leakyBucket(LeakyBucketSnapshot l, long now) {
    return first(
        config(l.getLimit(), l.getDuration(), l.getBurst()),
        l.getRemaining() < -l.getLimit()
            ? error(
                "field 'remaining' is "
                    + l.getRemaining()
                    + "; the engine keeps it at -limit ("
                    + -l.getLimit()
                    + ") or above")
            : Optional.empty(),
        timestamp("updated_at", l.getUpdatedAt(), 0, now),
        end("expire_at", l.getExpireAt(), now, l.getDuration()));
  }

  private Optional<String> fixedWindow(FixedWindowSnapshot f, long now) {
    return first(
        config(f.getLimit(), f.getDuration(), 0),
        timestamp("window_start", f.getWindowStart(), 0, now),
        end("expire_at", f.getExpireAt(), now, f.getDuration()));
  }

  private Optional<String> slidingWindow(SlidingWindowSnapshot s, long now) {
    return first(
        config(s.getLimit(), s.getDuration(), 0),
        timestamp("window_start", s.getWindowStart(), 0, now),
        end("expire_at", s.getExpireAt(), now, s.getDuration(), 2));
  }

  private static Optional<String> config(long limit, long duration, long burst) {
    if (limit < 0) {
      return negative("limit", limit);
    }
    if (duration < 0) {
      return negative("duration", duration);
    }
    if (burst < 0) {
      return negative("burst", burst);
    }
    return Optional.empty();
  }

  /**
   * Checks a time something happened: not before {@code earliest} minus the skew (0 = no lower
   * bound but the epoch) and not after {@code now} plus the skew.
   */
  private static Optional<String> timestamp(String field, long value, long earliest, long now) {
    return timestamp(field, value, earliest, now, SKEW, "peers' clocks may differ by at most ");
  }

  private static Optional<String> timestamp(
      String field, long value, long earliest, long now, long skew, String allowed) {
    long low = earliest == 0 ? 0 : SaturatingMath.sub(earliest, skew);
    long high = SaturatingMath.add(now, skew);
    if (value < low || value > high) {
      return error(
          "field '"
              + field
              + "' is "
              + value
              + ", "
              + describeOffset(value, now)
              + " this node's clock ("
              + now
              + "); "
              + allowed
              + skew
              + " ms");
    }
    return Optional.empty();
  }

  /**
   * Checks the time a bucket ends: not negative and not later than a bucket of {@code duration}
   * made now could end (two windows; for a duration that may be a Gregorian code, a leap year, or
   * two for a sliding window, which keeps its previous window).
   */
  private static Optional<String> end(String field, long value, long now, long duration) {
    return end(field, value, now, duration, 1);
  }

  private static Optional<String> end(
      String field, long value, long now, long duration, int gregorianWindows) {
    long lifetime =
        duration <= MAX_GREGORIAN_CODE
            ? gregorianWindows * GREGORIAN_SPAN_MILLIS
            : SaturatingMath.add(SaturatingMath.mul(duration, 2), 1);
    long high = SaturatingMath.add(SaturatingMath.add(now, SKEW), lifetime);
    if (value < 0 || value > high) {
      return error(
          "field '"
              + field
              + "' is "
              + value
              + "; a bucket of duration "
              + duration
              + " ends between 0 and "
              + high);
    }
    return Optional.empty();
  }

  private static Optional<String> within(String field, long value, long low, long high) {
    if (value < low || value > high) {
      return error(
          "field '"
              + field
              + "' is "
              + value
              + "; the engine keeps it within "
              + low
              + ".."
              + high);
    }
    return Optional.empty();
  }

  private static String describeOffset(long value, long now) {
    return value < now
        ? SaturatingMath.sub(now, value) + " ms behind"
        : SaturatingMath.sub(value, now) + " ms ahead of";
  }

  @SafeVarargs
  private static Optional<String> first(Optional<String>... checks) {
    for (Optional<String> check : checks) {
      if (check.isPresent()) {
        return check;
      }
    }
    return Optional.empty();
  }

  private static Optional<String> negative(String field, long value) {
    return error("field '" + field + "' cannot be negative, got " + value);
  }

  private static Optional<String> error(String message) {
    return Optional.of(message);
  }
}
