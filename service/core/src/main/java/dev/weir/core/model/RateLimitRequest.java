package dev.weir.core.model;

import java.util.Map;
import java.util.Objects;

/**
 * One rate-limit check: the bucket it names ({@code name} + {@code uniqueKey}), the hits to take and the
 * bucket's configuration, which travels with every request. Immutable, with value equality over its
 * ten components like a record; it is a class only so that it can remember its {@link #hashKey()},
 * which the ring and the store both read.
 */
public final class RateLimitRequest {

  private final String name;
  private final String uniqueKey;
  private final long hits;
  private final long limit;
  private final long duration;
  private final int algorithm;
  private final int behavior;
  private final long burst;
  private final long createdAt;
  private final Map<String, String> metadata;
  private String hashKey;

  /**
   * Creates a request, copying {@code metadata}.
   *
   * @param name the limit's namespace, e.g. {@code requests_per_second}
   * @param uniqueKey the bucket within the namespace, e.g. {@code account:1234}
   * @param hits tokens to take; 0 queries, negative gives tokens back
   * @param limit tokens per window (or per {@code duration} for the leaky bucket)
   * @param duration window length in milliseconds, or a {@link GregorianInterval} code
   * @param algorithm the wire number of the {@link Algorithm}; unknown numbers are a per-item error
   * @param behavior OR-ed {@link Behavior} flags
   * @param burst leaky bucket capacity; 0 means {@code limit}
   * @param createdAt epoch milliseconds of the request, the clock of the algorithms; 0 means unset
   * @param metadata free-form key/value pairs carried with the request (trace context)
   */
  public RateLimitRequest(
      String name,
      String uniqueKey,
      long hits,
      long limit,
      long duration,
      int algorithm,
      int behavior,
      long burst,
      long createdAt,
      Map<String, String> metadata) {
    this.name = Objects.requireNonNull(name, "name");
    this.uniqueKey = Objects.requireNonNull(uniqueKey, "uniqueKey");
    this.hits = hits;
    this.limit = limit;
    this.duration = duration;
    this.algorithm = algorithm;
    this.behavior = behavior;
    this.burst = burst;
    this.createdAt = createdAt;
    this.metadata = metadata == null || metadata.isEmpty() ? Map.of() : Map.copyOf(metadata);
  }

  private RateLimitRequest(RateLimitRequest from, long hits, int behavior, long createdAt) {
    this(from, hits, behavior, createdAt, from.metadata);
  }

  private RateLimitRequest(
      RateLimitRequest from, long hits, int behavior, long createdAt, Map<String, String> metadata) {
    this.name = from.name;
    this.uniqueKey = from.uniqueKey;
    this.hits = hits;
    this.limit = from.limit;
    this.duration = from.duration;
    this.algorithm = from.algorithm;
    this.behavior = behavior;
    this.burst = from.burst;
    this.createdAt = createdAt;
    this.metadata = metadata;
    this.hashKey = from.hashKey;
  }

  /** Returns the limit's namespace. */
  public String name() {
    return name;
  }

  /** Returns the bucket within the namespace. */
  public String uniqueKey() {
    return uniqueKey;
  }

  /** Returns the tokens to take; 0 queries, negative gives tokens back. */
  public long hits() {
    return hits;
  }

  /** Returns the tokens per window (or per {@code duration} for the leaky bucket). */
  public long limit() {
    return limit;
  }

  /** Returns the window length in milliseconds, or a {@link GregorianInterval} code. */
  public long duration() {
    return duration;
  }

  /** Returns the wire number of the {@link Algorithm}. */
  public int algorithm() {
    return algorithm;
  }

  /** Returns the OR-ed {@link Behavior} flags. */
  public int behavior() {
    return behavior;
  }

  /** Returns the leaky bucket capacity; 0 means {@code limit}. */
  public long burst() {
    return burst;
  }

  /** Returns the leaky bucket's capacity: {@link #burst()}, or {@link #limit()} when it is 0. */
  public long effectiveBurst() {
    return burst == 0 ? limit : burst;
  }

  /** Returns the epoch milliseconds of the request; 0 means unset. */
  public long createdAt() {
    return createdAt;
  }

  /** Returns the metadata carried with the request. */
  public Map<String, String> metadata() {
    return metadata;
  }

  /** Returns the key that identifies this request's bucket in the store and on the ring. */
  public String hashKey() {
    String key = hashKey;
    if (key == null) {
      key = name + "_" + uniqueKey;
      hashKey = key;
    }
    return key;
  }

  /** Returns whether {@code flag} is among this request's behaviors. */
  public boolean has(int flag) {
    return Behavior.has(behavior, flag);
  }

  /** Returns a copy with {@code createdAt} replaced. */
  public RateLimitRequest withCreatedAt(long newCreatedAt) {
    return new RateLimitRequest(this, hits, behavior, newCreatedAt);
  }

  /** Returns a copy with {@code behavior} replaced. */
  public RateLimitRequest withBehavior(int newBehavior) {
    return new RateLimitRequest(this, hits, newBehavior, createdAt);
  }

  /** Returns a copy with {@code name} replaced. */
  public RateLimitRequest withName(String newName) {
    return new RateLimitRequest(
        newName, uniqueKey, hits, limit, duration, algorithm, behavior, burst, createdAt, metadata);
  }

  /** Returns a copy with {@code newMetadata} (copied) in place of the metadata. */
  public RateLimitRequest withMetadata(Map<String, String> newMetadata) {
    Map<String, String> copied =
        newMetadata == null || newMetadata.isEmpty() ? Map.of() : Map.copyOf(newMetadata);
    return new RateLimitRequest(this, hits, behavior, createdAt, copied);
  }

  /** Returns a copy with {@code hits} replaced. */
  public RateLimitRequest withHits(long newHits) {
    return new RateLimitRequest(this, newHits, behavior, createdAt);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RateLimitRequest r
        && hits == r.hits
        && limit == r.limit
        && duration == r.duration
        && algorithm == r.algorithm
        && behavior == r.behavior
        && burst == r.burst
        && createdAt == r.createdAt
        && name.equals(r.name)
        && uniqueKey.equals(r.uniqueKey)
        && metadata.equals(r.metadata);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        name, uniqueKey, hits, limit, duration, algorithm, behavior, burst, createdAt, metadata);
  }

  @Override
  public String toString() {
    return "RateLimitRequest[name="
        + name
        + ", uniqueKey="
        + uniqueKey
        + ", hits="
        + hits
        + ", limit="
        + limit
        + ", duration="
        + duration
        + ", algorithm="
        + algorithm
        + ", behavior="
        + behavior
        + ", burst="
        + burst
        + ", createdAt="
        + createdAt
        + ", metadata="
        + metadata
        + "]";
  }

  /** Returns a builder with defaults: 1 hit, token bucket, no behaviors. */
  public static Builder builder(String name, String uniqueKey) {
    return new Builder(name, uniqueKey);
  }

  /** A builder of {@link RateLimitRequest}, for tests and library callers. */
  public static final class Builder {
    private final String name;
    private final String uniqueKey;
    private long hits = 1;
    private long limit;
    private long duration;
    private int algorithm = Algorithm.TOKEN_BUCKET.number();
    private int behavior;
    private long burst;
    private long createdAt;
    private Map<String, String> metadata = Map.of();

    private Builder(String name, String uniqueKey) {
      this.name = name;
      this.uniqueKey = uniqueKey;
    }

    /** Sets the hits to take. */
    public Builder hits(long value) {
      this.hits = value;
      return this;
    }

    /** Sets the limit. */
    public Builder limit(long value) {
      this.limit = value;
      return this;
    }

    /** Sets the duration in milliseconds (or a Gregorian code). */
    public Builder duration(long value) {
      this.duration = value;
      return this;
    }

    /** Sets the algorithm. */
    public Builder algorithm(Algorithm value) {
      this.algorithm = value.number();
      return this;
    }

    /** Sets the algorithm by wire number, which may be invalid. */
    public Builder algorithmNumber(int value) {
      this.algorithm = value;
      return this;
    }

    /** Sets the behavior flags. */
    public Builder behavior(int value) {
      this.behavior = value;
      return this;
    }

    /** Sets the burst. */
    public Builder burst(long value) {
      this.burst = value;
      return this;
    }

    /** Sets the creation time in epoch milliseconds. */
    public Builder createdAt(long value) {
      this.createdAt = value;
      return this;
    }

    /** Sets the metadata. */
    public Builder metadata(Map<String, String> value) {
      this.metadata = value;
      return this;
    }

    /** Returns the request. */
    public RateLimitRequest build() {
      return new RateLimitRequest(
          name, uniqueKey, hits, limit, duration, algorithm, behavior, burst, createdAt, metadata);
    }
  }
}
