package dev.weir.core.cluster.ring;

import java.nio.charset.StandardCharsets;
import java.util.Locale;

/** A 64-bit hash function used to place keys and peer replicas on the {@link HashRing}. */
public enum PeerHash {
  /** 64-bit FNV-1a: XOR each byte in, then multiply. The default, as Gubernator's replicated-hash picker. */
  FNV1A {
    @Override
    public long hash(byte[] data) {
      long h = OFFSET_BASIS;
      for (byte b : data) {
        h ^= b & 0xff;
        h *= PRIME;
      }
      return h;
    }

    @Override
    public long hash(String text) {
      long h = OFFSET_BASIS;
      for (int i = 0; i < text.length(); i++) {
        char c = text.charAt(i);
        if (c >= 0x80) {
          return hash(text.getBytes(StandardCharsets.UTF_8));
        }
        h ^= c;
        h *= PRIME;
      }
      return h;
    }
  },
  /** 64-bit FNV-1: multiply, then XOR each byte in. */
  FNV1 {
    @Override
    public long hash(byte[] data) {
      long h = OFFSET_BASIS;
      for (byte b : data) {
        h *= PRIME;
        h ^= b & 0xff;
      }
      return h;
    }

    @Override
    public long hash(String text) {
      long h = OFFSET_BASIS;
      for (int i = 0; i < text.length(); i++) {
        char c = text.charAt(i);
        if (c >= 0x80) {
          return hash(text.getBytes(StandardCharsets.UTF_8));
        }
        h *= PRIME;
        h ^= c;
      }
      return h;
    }
  };

  private static final long OFFSET_BASIS = 0xcbf29ce484222325L;
  private static final long PRIME = 0x100000001b3L;

  /** Returns the 64-bit hash of {@code data}, to be compared as an unsigned number. */
  public abstract long hash(byte[] data);

  /**
   * Returns the hash of the UTF-8 bytes of {@code text}; ASCII text is hashed without encoding it
   * first.
   */
  public abstract long hash(String text);

  /**
   * Returns the hash named {@code name} ({@code fnv1a} or {@code fnv1}, any case).
   *
   * @throws IllegalArgumentException naming the value and the allowed ones
   */
  public static PeerHash parse(String name) {
    switch (name.trim().toLowerCase(Locale.ROOT)) {
      case "fnv1a":
        return FNV1A;
      case "fnv1":
        return FNV1;
      default:
        throw new IllegalArgumentException(
            "unknown peer picker hash '" + name + "'; allowed: fnv1a, fnv1");
    }
  }
}
