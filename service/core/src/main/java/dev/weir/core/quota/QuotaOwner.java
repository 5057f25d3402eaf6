package dev.weir.core.quota;

import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.engine.RequestValidator;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;
import dev.weir.core.time.Scheduler;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The owner's side of quota sharing: takes the usage reports of the buckets this node owns, counts
 * the requests the proxies allowed in each bucket (in the store, so counts move with hand-off) and
 * answers each proxy with its share ({@link BucketLedger}); pushes the shares of other proxies that
 * change because of a report, a proxy leaving or a spent window ending.
 *
 * <p>Design: one {@link BucketLedger} per bucket key, each used under its own lock; a ledger whose
 * proxies are all gone is dropped (checked at a release, and for every ledger at most once per
 * {@link #SWEEP_INTERVAL} on a report). The fleet's rate comes from the bucket's state through the
 * pure engine, queried without storing ({@link QuotaBudget}). Reported requests are recorded with
 * {@code DRAIN_OVER_LIMIT}, as admitted hits that may exceed the limit; for a {@code fixed_window}
 * the part of a report that falls before the current window, pro rata, is left out. When a window
 * is spent, a timer on the injected scheduler rebalances the bucket when it ends. Pushes are sent
 * after the ledger's lock is released.
 *
 * <p>The owner holds at most about as many ledgers as its store holds buckets ({@code
 * WEIR_CACHE_SIZE}): a count beyond them would be evicted anyway. The usage of a new bucket beyond
 * them is not counted and is answered with a share of 0 (the proxy denies the bucket, so the limit
 * holds), until ledgers of expired proxies are dropped.
 */
public final class QuotaOwner {

  /** How many report intervals after its last report a proxy is forgotten. */
  public static final long EXPIRY_INTERVALS = 2;

  /** How often empty ledgers are looked for. */
  public static final Duration SWEEP_INTERVAL = Duration.ofMinutes(1);

  private static final RateLimitedLogger WARNINGS = RateLimitedLogger.of(QuotaOwner.class);

  private final BucketStore store;
  private final RateLimitEngine engine = new RateLimitEngine(ZoneOffset.UTC);
  private final Clock clock;
  private final Scheduler scheduler;
  private final QuotaPushSink pushes;
  private final Map<String, Holder> ledgers = new ConcurrentHashMap<>();
  private final long maxLedgers;
  private volatile long lastSweep;

  /**
   * Creates the owner of the buckets in {@code store}, timing at {@code clock} with timers on
   * {@code scheduler} and sending pushes to {@code pushes}.
   */
  public QuotaOwner(BucketStore store, Clock clock, Scheduler scheduler, QuotaPushSink pushes) {
    this(store, clock, scheduler, pushes, store.capacity());
  }

  /**
   * Creates the owner as {@link #QuotaOwner(BucketStore, Clock, Scheduler, QuotaPushSink)} does,
   * holding at most about {@code maxLedgers} ledgers (the store's capacity there).
   */
  public QuotaOwner(
      BucketStore store, Clock clock, Scheduler scheduler, QuotaPushSink pushes, long maxLedgers) {
    this.store = store;
    this.clock = clock;
    this.scheduler = scheduler;
    this.pushes = pushes;
    this.maxLedgers = maxLedgers;
  }

  /** Returns how many buckets have proxies sharing them here. */
  public int buckets() {
    return ledgers.size();
  }

  /** Takes {@code usages} in order and returns each proxy's share, one per usage. */
  public List<QuotaShare> report(List<QuotaUsage> usages) {
    List<QuotaShare> out = new ArrayList<>(usages.size());
    for (QuotaUsage usage : usages) {
      out.add(reportOne(usage));
    }
    sweepIfDue();
    return out;
  }

  private QuotaShare reportOne(QuotaUsage usage) {
    String invalid = RequestValidator.validate(usage.rule()).orElse(null);
    if (invalid != null) {
      return QuotaShare.error(invalid);
    }
    String key = usage.key();
    while (true) {
      Holder holder = ledgers.get(key);
      if (holder == null) {
        if (ledgers.size() >= maxLedgers) {
          sweepIfDue();
        }
        if (ledgers.size() >= maxLedgers) {
          return beyondLedgers(usage);
        }
        holder =
            ledgers.computeIfAbsent(
                key, k -> new Holder(new BucketLedger(k, clock.wallMillis(), EXPIRY_INTERVALS)));
      }
      List<QuotaPush> changed;
      QuotaShare share;
      synchronized (holder) {
        if (holder.retired) {
          continue;
        }
        long now = clock.wallMillis();
        BucketLedger ledger = holder.ledger;
        ledger.expire(now);
        if (usage.released()) {
          changed =
              ledger.release(usage.client()) && !ledger.isEmpty()
                  ? rebalance(holder, now)
                  : List.of();
          share = new QuotaShare(0, 0, 0, 0, 0, "");
          retireIfEmpty(key, holder);
        } else {
          RateLimitRequest rule = usage.rule();
          long recorded = attributable(usage, now);
          RateLimitRequest hits =
              rule.withHits(recorded).withBehavior(Behavior.DRAIN_OVER_LIMIT).withCreatedAt(now);
          RateLimitResponse counted =
              store.update(key, now, prior -> engine.apply(prior, hits, now));
          if (counted.isError()) {
            return QuotaShare.error(counted.error());
          }
          BucketLedger.Client client = ledger.record(usage, now);
          QuotaBudget budget = budget(ledger, client, now, usage.intervalMillis());
          long spentUntil = budget.spent() ? budget.resetTime() : 0;
          changed = ledger.allocate(client, budget.fleetRate(), spentUntil);
          share = ledger.share(client, spentUntil);
          if (spentUntil > 0) {
            scheduleRebalance(key, holder, spentUntil - now);
          }
        }
      }
      if (!changed.isEmpty()) {
        pushes.send(changed);
      }
      return share;
    }
  }

  /**
   * Answers {@code usage} of a bucket without a ledger while the owner holds {@code maxLedgers}:
   * with a share of 0, logged, or a release's answer for a release.
   */
  private QuotaShare beyondLedgers(QuotaUsage usage) {
    if (!usage.released()) {
      WARNINGS.warn(
          "ledgers",
          "this node shares {} RLQS buckets, as many as its store holds (WEIR_CACHE_SIZE: {});"
              + " the usage of a new bucket '{}' is not counted and its proxy is denied until"
              + " buckets without proxies are dropped",
          ledgers.size(),
          maxLedgers,
          usage.key());
    }
    return new QuotaShare(0, 0, 0, 0, 0, "");
  }

  /**
   * Returns the requests of {@code usage} to count now: all of them, except that for a {@code
   * fixed_window} the part of the report's time that lies before the current window is left out,
   * pro rata.
   */
  private long attributable(QuotaUsage usage, long now) {
    RateLimitRequest rule = usage.rule();
    long elapsed = usage.elapsedMillis();
    if (rule.algorithm() != Algorithm.FIXED_WINDOW.number() || elapsed <= 0) {
      return usage.allowed();
    }
    BucketState state = store.get(usage.key()).orElse(null);
    long windowEnd = query(state, rule, now).resetTime();
    long windowStart = windowEnd - rule.duration();
    if (now - elapsed >= windowStart) {
      return usage.allowed();
    }
    return Math.round(usage.allowed() * (double) Math.max(0, now - windowStart) / elapsed);
  }

  private QuotaBudget budget(
      BucketLedger ledger, BucketLedger.Client reporter, long now, long horizon) {
    RateLimitRequest rule = ledger.rule();
    BucketState state = store.get(rule.hashKey()).orElse(null);
    RateLimitResponse atNow = query(state, rule, now);
    RateLimitResponse atHorizon = query(state, rule, now + horizon);
    return new QuotaBudget(
        Algorithm.forNumber(rule.algorithm()).orElse(Algorithm.TOKEN_BUCKET),
        rule.limit(),
        rule.duration(),
        atNow.remaining(),
        atNow.resetTime(),
        atHorizon.remaining(),
        now,
        horizon,
        ledger.unreported(reporter, now),
        ledger.bursts());
  }

  private RateLimitResponse query(BucketState state, RateLimitRequest rule, long at) {
    RateLimitRequest probe = rule.withHits(0).withBehavior(0).withCreatedAt(at);
    return engine.apply(state, probe, at).response();
  }

  private List<QuotaPush> rebalance(Holder holder, long now) {
    BucketLedger ledger = holder.ledger;
    if (ledger.rule() == null || ledger.isEmpty()) {
      return List.of();
    }
    long horizon = ledger.clients().get(0).intervalMillis;
    QuotaBudget budget = budget(ledger, null, now, horizon);
    long spentUntil = budget.spent() ? budget.resetTime() : 0;
    if (spentUntil > 0) {
      scheduleRebalance(ledger.rule().hashKey(), holder, spentUntil - now);
    }
    return ledger.rebalance(budget.fleetRate(), spentUntil);
  }

  // Caller holds the holder's lock.
  private void scheduleRebalance(String key, Holder holder, long delayMillis) {
    if (holder.timer != null) {
      return;
    }
    holder.timer =
        scheduler.schedule(() -> rebalanceNow(key, holder), Duration.ofMillis(delayMillis));
  }

  private void rebalanceNow(String key, Holder holder) {
    List<QuotaPush> changed;
    synchronized (holder) {
      holder.timer = null;
      if (holder.retired) {
        return;
      }
      long now = clock.wallMillis();
      holder.ledger.expire(now);
      changed = rebalance(holder, now);
      retireIfEmpty(key, holder);
    }
    if (!changed.isEmpty()) {
      pushes.send(changed);
    }
  }

  // Caller holds the holder's lock.
  private void retireIfEmpty(String key, Holder holder) {
    if (holder.ledger.isEmpty()) {
      holder.retired = true;
      if (holder.timer != null) {
        holder.timer.cancel();
        holder.timer = null;
      }
      ledgers.remove(key, holder);
    }
  }

  private void sweepIfDue() {
    long now = clock.wallMillis();
    if (now - lastSweep < SWEEP_INTERVAL.toMillis()) {
      return;
    }
    lastSweep = now;
    ledgers.forEach(
        (key, holder) -> {
          synchronized (holder) {
            if (!holder.retired) {
              holder.ledger.expire(now);
              retireIfEmpty(key, holder);
            }
          }
        });
  }

  /** A ledger and its lock; retired once removed from the map. */
  private static final class Holder {
    final BucketLedger ledger;
    boolean retired;
    Scheduler.Task timer;

    Holder(BucketLedger ledger) {
      this.ledger = ledger;
    }
  }
}
