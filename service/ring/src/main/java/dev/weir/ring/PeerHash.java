package dev.weir.ring;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;

/** A 64-bit hash function used to place keys and peer replicas on the {@link HashRing}. */
public enum PeerHash {
  /** 64-bit FNV-1a: XOR each byte in, then multiply. Gubernator's replicated-hash picker's. */
  FNV1A("fnv1a") {
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
  FNV1("fnv1") {
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
  },
  /**
   * 64-bit FNV-1a followed by MurmurHash3's 64-bit finalizer ({@code fmix64}), which spreads keys
   * differing only in their last characters (ids, addresses) over the whole ring, where FNV-1a alone
   * leaves them close together. The default.
   */
  FNV1A_FMIX64("fnv1a-fmix64") {
    @Override
    public long hash(byte[] data) {
      return fmix64(FNV1A.hash(data));
    }

    @Override
    public long hash(String text) {
      return fmix64(FNV1A.hash(text));
    }
  };

  private static final long OFFSET_BASIS = 0xcbf29ce484222325L;
  private static final long PRIME = 0x100000001b3L;

  private final String settingName;

  PeerHash(String settingName) {
    this.settingName = settingName;
  }

  /** Returns the name {@code WEIR_PEER_PICKER_HASH} gives this hash, such as {@code fnv1a}. */
  public String settingName() {
    return settingName;
  }

  /** Returns every hash's {@link #settingName()}, the default first. */
  public static List<String> settingNames() {
    return List.of(FNV1A_FMIX64.settingName, FNV1A.settingName, FNV1.settingName);
  }

  /**
   * Returns MurmurHash3's 64-bit finalizer of {@code k}: a bijection in which each input bit flips
   * about half of the output bits.
   */
  static long fmix64(long k) {
    k ^= k >>> 33;
    k *= 0xff51afd7ed558ccdL;
    k ^= k >>> 33;
    k *= 0xc4ceb9fe1a85ec53L;
    k ^= k >>> 33;
    return k;
  }

  /** Returns the 64-bit hash of {@code data}, to be compared as an unsigned number. */
  public abstract long hash(byte[] data);

  /**
   * Returns the hash of the UTF-8 bytes of {@code text}; ASCII text is hashed without encoding it
   * first.
   */
  public abstract long hash(String text);

  /**
   * Returns the hash whose {@link #settingName()} is {@code name}, in any case.
   *
   * @throws IllegalArgumentException naming the value and the allowed ones
   */
  public static PeerHash parse(String name) {
    String wanted = name.trim().toLowerCase(Locale.ROOT);
    for (PeerHash hash : values()) {
      if (hash.settingName.equals(wanted)) {
        return hash;
      }
    }
    throw new IllegalArgumentException(
        "unknown peer picker hash '"
            + name
            + "'; allowed: "
            + String.join(", ", settingNames()));
  }
}
