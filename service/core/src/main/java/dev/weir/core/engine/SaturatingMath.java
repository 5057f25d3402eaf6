package dev.weir.core.engine;

import java.math.BigInteger;

/**
 * Long arithmetic that clamps to {@link Long#MIN_VALUE}/{@link Long#MAX_VALUE} instead of wrapping,
 * so that limits, hits and durations up to {@code Long.MAX_VALUE} never overflow.
 *
 * <p>{@link #mulDivFloor} and {@link #mulDivCeil} take the exact 128-bit product: the common case
 * (product below 2^63) is one multiplication and one division; larger products fall back to {@link
 * BigInteger}, which only extreme configurations reach.
 */
public final class SaturatingMath {

  private SaturatingMath() {}

  /** Returns {@code a + b}, clamped to the long range. */
  public static long add(long a, long b) {
    long r = a + b;
    if (((a ^ r) & (b ^ r)) < 0) {
      return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
    return r;
  }

  /** Returns {@code a - b}, clamped to the long range. */
  public static long sub(long a, long b) {
    long r = a - b;
    if (((a ^ b) & (a ^ r)) < 0) {
      return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
    return r;
  }

  /** Returns {@code a * b}, clamped to the long range. */
  public static long mul(long a, long b) {
    long hi = Math.multiplyHigh(a, b);
    long lo = a * b;
    if ((hi == 0 && lo >= 0) || (hi == -1 && lo < 0)) {
      return lo;
    }
    return (a < 0) == (b < 0) ? Long.MAX_VALUE : Long.MIN_VALUE;
  }

  /**
   * Returns {@code floor(a * b / c)} computed without intermediate overflow, clamped to the long
   * range; {@code a} and {@code b} must be non-negative and {@code c} positive.
   */
  public static long mulDivFloor(long a, long b, long c) {
    long hi = Math.multiplyHigh(a, b);
    long lo = a * b;
    if (hi == 0 && lo >= 0) {
      return lo / c;
    }
    return clamp(
        BigInteger.valueOf(a).multiply(BigInteger.valueOf(b)).divide(BigInteger.valueOf(c)));
  }

  /**
   * Returns {@code ceil(a * b / c)} computed without intermediate overflow, clamped to the long
   * range; {@code a} and {@code b} must be non-negative and {@code c} positive.
   */
  public static long mulDivCeil(long a, long b, long c) {
    long hi = Math.multiplyHigh(a, b);
    long lo = a * b;
    if (hi == 0 && lo >= 0) {
      long q = lo / c;
      return lo % c == 0 ? q : q + 1;
    }
    BigInteger[] qr =
        BigInteger.valueOf(a)
            .multiply(BigInteger.valueOf(b))
            .divideAndRemainder(BigInteger.valueOf(c));
    return clamp(qr[1].signum() == 0 ? qr[0] : qr[0].add(BigInteger.ONE));
  }

  /**
   * Returns whether {@code a * b >= c}, computed without overflow and without a division; {@code a}
   * and {@code b} must be non-negative.
   */
  public static boolean productAtLeast(long a, long b, long c) {
    long hi = Math.multiplyHigh(a, b);
    long lo = a * b;
    return hi != 0 || lo < 0 || lo >= c;
  }

  /** Returns the greatest common divisor of two non-negative numbers (0 when both are 0). */
  public static long gcd(long a, long b) {
    while (b != 0) {
      long t = a % b;
      a = b;
      b = t;
    }
    return a;
  }

  private static long clamp(BigInteger v) {
    if (v.bitLength() < 64) {
      return v.longValue();
    }
    return v.signum() > 0 ? Long.MAX_VALUE : Long.MIN_VALUE;
  }
}
