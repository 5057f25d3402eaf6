package dev.weir.http;

import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.limiter.InputLimits;
import java.time.Duration;

/**
 * The limits of an HTTP listener: its threads, how many requests it answers at once, how many
 * connections it keeps, how large a body it reads and how long it waits for a client. Every default
 * is far above what a real client needs; a slow or idle client that exceeds one is cut off.
 *
 * @param threads I/O threads: they read requests, run the routes (which never block) and write
 *     answers ({@code WEIR_HTTP_THREADS})
 * @param maxInFlight requests being answered at once; one more is answered 503 at once, except on
 *     probe routes ({@code WEIR_HTTP_MAX_IN_FLIGHT}, formerly {@code WEIR_HTTP_MAX_QUEUE})
 * @param maxConnections connections open at once; one more is answered 503 and closed as soon as it
 *     is accepted ({@code WEIR_HTTP_MAX_CONNECTIONS})
 * @param maxBodyBytes the largest request body read; a larger one is answered 413 ({@code
 *     WEIR_HTTP_MAX_BODY_SIZE}, read with the other {@link InputLimits})
 * @param headerTimeout the most time from a connection's start, or from the first byte of a further
 *     request on it, until the request head is complete ({@code WEIR_HTTP_HEADER_TIMEOUT})
 * @param bodyTimeout the most time from a complete head until the body is complete ({@code
 *     WEIR_HTTP_BODY_TIMEOUT})
 * @param idleTimeout the most time a kept-alive connection waits for its next request ({@code
 *     WEIR_HTTP_IDLE_TIMEOUT})
 * @param writeTimeout the most time from an answer being ready until all of it is written to the
 *     connection's socket, however slowly the client reads it ({@code WEIR_HTTP_WRITE_TIMEOUT})
 */
public record HttpSettings(
    int threads,
    int maxInFlight,
    int maxConnections,
    int maxBodyBytes,
    Duration headerTimeout,
    Duration bodyTimeout,
    Duration idleTimeout,
    Duration writeTimeout) {

  /** {@code WEIR_HTTP_THREADS}. */
  public static final EnvVar THREADS = EnvVar.of("WEIR_HTTP_THREADS");

  /**
   * {@code WEIR_HTTP_MAX_IN_FLIGHT}, read under its former name {@code WEIR_HTTP_MAX_QUEUE} too.
   */
  public static final EnvVar MAX_IN_FLIGHT =
      EnvVar.of("WEIR_HTTP_MAX_IN_FLIGHT", "WEIR_HTTP_MAX_QUEUE");

  /** {@code WEIR_HTTP_MAX_CONNECTIONS}. */
  public static final EnvVar MAX_CONNECTIONS = EnvVar.of("WEIR_HTTP_MAX_CONNECTIONS");

  /** {@code WEIR_HTTP_HEADER_TIMEOUT}. */
  public static final EnvVar HEADER_TIMEOUT = EnvVar.of("WEIR_HTTP_HEADER_TIMEOUT");

  /** {@code WEIR_HTTP_BODY_TIMEOUT}. */
  public static final EnvVar BODY_TIMEOUT = EnvVar.of("WEIR_HTTP_BODY_TIMEOUT");

  /** {@code WEIR_HTTP_IDLE_TIMEOUT}. */
  public static final EnvVar IDLE_TIMEOUT = EnvVar.of("WEIR_HTTP_IDLE_TIMEOUT");

  /** {@code WEIR_HTTP_WRITE_TIMEOUT}. */
  public static final EnvVar WRITE_TIMEOUT = EnvVar.of("WEIR_HTTP_WRITE_TIMEOUT");

  /** The most threads allowed. */
  public static final int MAX_THREADS = 1024;

  /** The highest request and connection limits allowed. */
  public static final int MAX_LIMIT = 1_000_000;

  /** The default number of requests answered at once. */
  public static final int DEFAULT_MAX_IN_FLIGHT = 1024;

  /** The default number of connections open at once. */
  public static final int DEFAULT_MAX_CONNECTIONS = 10_000;

  /** The default header timeout. */
  public static final Duration DEFAULT_HEADER_TIMEOUT = Duration.ofSeconds(10);

  /** The default body timeout. */
  public static final Duration DEFAULT_BODY_TIMEOUT = Duration.ofSeconds(30);

  /** The default idle timeout. */
  public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);

  /** The default write timeout. */
  public static final Duration DEFAULT_WRITE_TIMEOUT = Duration.ofSeconds(10);

  private static final Duration SHORTEST = Duration.ofMillis(100);
  private static final Duration LONGEST = Duration.ofHours(1);

  /** Checks the ranges. */
  public HttpSettings {
    check("threads", threads, 1, MAX_THREADS);
    check("maxInFlight", maxInFlight, 1, MAX_LIMIT);
    check("maxConnections", maxConnections, 1, MAX_LIMIT);
    check("maxBodyBytes", maxBodyBytes, 0, Integer.MAX_VALUE - 1);
    check("headerTimeout", headerTimeout);
    check("bodyTimeout", bodyTimeout);
    check("idleTimeout", idleTimeout);
    check("writeTimeout", writeTimeout);
  }

  private static void check(String name, int value, int min, int max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(
          name + " is " + value + "; it must be from " + min + " to " + max);
    }
  }

  private static void check(String name, Duration value) {
    if (value.compareTo(SHORTEST) < 0 || value.compareTo(LONGEST) > 0) {
      throw new IllegalArgumentException(
          name + " is " + value + "; it must be from " + SHORTEST + " to " + LONGEST);
    }
  }

  /** Returns the defaults on this machine: 2 threads per CPU and the default limits. */
  public static HttpSettings defaults() {
    return new HttpSettings(
        defaultThreads(),
        DEFAULT_MAX_IN_FLIGHT,
        DEFAULT_MAX_CONNECTIONS,
        InputLimits.DEFAULTS.maxHttpBodyBytes(),
        DEFAULT_HEADER_TIMEOUT,
        DEFAULT_BODY_TIMEOUT,
        DEFAULT_IDLE_TIMEOUT,
        DEFAULT_WRITE_TIMEOUT);
  }

  /**
   * Reads the settings from {@code env}, each unset one taking its default; the body limit is
   * {@code limits.maxHttpBodyBytes()}.
   */
  public static HttpSettings from(EnvReader env, InputLimits limits) {
    return new HttpSettings(
        env.intInRange(THREADS, defaultThreads(), 1, MAX_THREADS),
        env.intInRange(MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT, 1, MAX_LIMIT),
        env.intInRange(MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS, 1, MAX_LIMIT),
        limits.maxHttpBodyBytes(),
        env.duration(HEADER_TIMEOUT, DEFAULT_HEADER_TIMEOUT, SHORTEST, LONGEST),
        env.duration(BODY_TIMEOUT, DEFAULT_BODY_TIMEOUT, SHORTEST, LONGEST),
        env.duration(IDLE_TIMEOUT, DEFAULT_IDLE_TIMEOUT, SHORTEST, LONGEST),
        env.duration(WRITE_TIMEOUT, DEFAULT_WRITE_TIMEOUT, SHORTEST, LONGEST));
  }

  /** Returns these settings with {@code value} threads. */
  public HttpSettings withThreads(int value) {
    return new HttpSettings(
        value,
        maxInFlight,
        maxConnections,
        maxBodyBytes,
        headerTimeout,
        bodyTimeout,
        idleTimeout,
        writeTimeout);
  }

  /** Returns these settings with at most {@code value} requests in flight. */
  public HttpSettings withMaxInFlight(int value) {
    return new HttpSettings(
        threads,
        value,
        maxConnections,
        maxBodyBytes,
        headerTimeout,
        bodyTimeout,
        idleTimeout,
        writeTimeout);
  }

  /** Returns these settings with at most {@code value} connections. */
  public HttpSettings withMaxConnections(int value) {
    return new HttpSettings(
        threads,
        maxInFlight,
        value,
        maxBodyBytes,
        headerTimeout,
        bodyTimeout,
        idleTimeout,
        writeTimeout);
  }

  /** Returns these settings with a body limit of {@code value} bytes. */
  public HttpSettings withMaxBodyBytes(int value) {
    return new HttpSettings(
        threads,
        maxInFlight,
        maxConnections,
        value,
        headerTimeout,
        bodyTimeout,
        idleTimeout,
        writeTimeout);
  }

  /** Returns these settings with the given header, body and idle timeouts. */
  public HttpSettings withTimeouts(Duration header, Duration body, Duration idle) {
    return new HttpSettings(
        threads, maxInFlight, maxConnections, maxBodyBytes, header, body, idle, writeTimeout);
  }

  /** Returns these settings with a write timeout of {@code value}. */
  public HttpSettings withWriteTimeout(Duration value) {
    return new HttpSettings(
        threads,
        maxInFlight,
        maxConnections,
        maxBodyBytes,
        headerTimeout,
        bodyTimeout,
        idleTimeout,
        value);
  }

  private static int defaultThreads() {
    return Math.min(MAX_THREADS, 2 * Runtime.getRuntime().availableProcessors());
  }
}
