package dev.weir.ring;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * An immutable consistent-hash ring with virtual nodes that maps a hash key to the peer that owns it.
 *
 * <p>Design: each peer (identified by its advertised gRPC address) contributes {@code replicas}
 * points; point {@code i} of a peer is {@code hash(decimal(i) + hex(md5(address)))}, as Gubernator's
 * replicated hash picker places them (with {@link PeerHash#FNV1A} and 512 replicas this is
 * Gubernator's ring). Points are sorted as unsigned 64-bit numbers (ties broken by address), so the
 * ring is the same whatever order the peers were given in. The owner of a key is the peer of the
 * first point whose hash is at least the key's hash, wrapping to the first point; the lookup is a
 * binary search and allocates nothing.
 */
public final class HashRing {

  /**
   * The most points one member may have: the bound of a node's {@code WEIR_REPLICATED_HASH_REPLICAS}
   * and of the ring a client accepts.
   */
  public static final int MAX_REPLICAS = 65_536;

  /**
   * The most points a ring from an untrusted source should have, members times replicas: 16 777
   * 216 (4096 members at the default 4096 replicas), whose arrays take about 320 MiB while the
   * ring is built; see {@link #checkPoints}.
   */
  public static final int MAX_POINTS = 1 << 24;

  // The most elements a Java array may hold.
  private static final int MAX_ARRAY = Integer.MAX_VALUE - 8;

  private static final double TWO_TO_64 = 0x1p64;

  private final List<String> peers;
  private final PeerHash hash;
  private final int replicas;
  // Point hashes with the sign bit flipped, so that signed order is unsigned order.
  private final long[] points;
  private final String[] owners;

  private HashRing(Collection<String> peerAddresses, int replicas, PeerHash hash) {
    if (replicas < 1) {
      throw new IllegalArgumentException("replicas must be at least 1, got " + replicas);
    }
    TreeSet<String> sorted = new TreeSet<>(peerAddresses);
    long size = (long) sorted.size() * replicas;
    if (size > MAX_ARRAY) {
      throw tooMany(sorted.size(), replicas, MAX_ARRAY);
    }
    this.peers = List.copyOf(sorted);
    this.hash = hash;
    this.replicas = replicas;
    int n = (int) size;
    String[] byIndex = sorted.toArray(new String[0]);
    long[] placed = new long[n];
    int k = 0;
    for (String peer : byIndex) {
      String md5 = md5Hex(peer);
      for (int i = 0; i < replicas; i++) {
        placed[k++] = hash.hash(i + md5) ^ Long.MIN_VALUE;
      }
    }
    this.points = placed.clone();
    Arrays.sort(points);
    this.owners = new String[n];
    k = 0;
    for (String peer : byIndex) {
      for (int i = 0; i < replicas; i++) {
        owners[slotOf(placed[k++])] = peer;
      }
    }
  }

  /**
   * Returns the first unclaimed slot of the points equal to {@code point}; peers are placed in
   * address order, so equal points go to their peers in address order.
   */
  private int slotOf(long point) {
    int i = Arrays.binarySearch(points, point);
    while (i > 0 && points[i - 1] == point) {
      i--;
    }
    while (owners[i] != null) {
      i++;
    }
    return i;
  }

  /**
   * Checks that a ring of {@code members} with {@code replicas} points each has at most {@link
   * #MAX_POINTS} points, as a ring received from elsewhere must before it is built.
   *
   * @throws IllegalArgumentException naming both numbers and the cap when it has more
   */
  public static void checkPoints(int members, int replicas) {
    if ((long) members * replicas > MAX_POINTS) {
      throw tooMany(members, replicas, MAX_POINTS);
    }
  }

  private static IllegalArgumentException tooMany(int members, int replicas, int most) {
    return new IllegalArgumentException(
        "members ("
            + members
            + ") times replicas ("
            + replicas
            + ") is "
            + (long) members * replicas
            + " points; allowed: at most "
            + most);
  }

  /**
   * Returns a ring of {@code peers} (duplicates ignored) with {@code replicas} points each.
   *
   * @throws IllegalArgumentException when {@code replicas} is below 1 or the ring would have more
   *     points than an array holds
   */
  public static HashRing of(Collection<String> peers, int replicas, PeerHash hash) {
    return new HashRing(peers, replicas, hash);
  }

  /** Returns the address of the peer that owns {@code hashKey} ({@code name + "_" + unique_key}). */
  public String ownerOf(String hashKey) {
    if (points.length == 0) {
      throw new IllegalStateException("unable to pick a peer; pool is empty");
    }
    if (peers.size() == 1) {
      return peers.get(0);
    }
    long h = hash.hash(hashKey) ^ Long.MIN_VALUE;
    int i = Arrays.binarySearch(points, h);
    if (i < 0) {
      i = -i - 1;
    } else {
      while (i > 0 && points[i - 1] == h) {
        i--;
      }
    }
    return owners[i == points.length ? 0 : i];
  }

  /**
   * Returns each peer's share of the hash space, from 0 to 1, by address: the fraction of all
   * 64-bit key hashes that {@link #ownerOf} gives it (the arcs that end at its points). The shares
   * add up to 1 (up to rounding); a lone peer has 1, an empty ring none.
   */
  public Map<String, Double> shares() {
    Map<String, Double> shares = new TreeMap<>();
    if (peers.size() == 1) {
      shares.put(peers.get(0), 1.0);
      return shares;
    }
    for (String peer : peers) {
      shares.put(peer, 0.0);
    }
    for (int i = 0; i < points.length; i++) {
      long arc = points[i] - points[i == 0 ? points.length - 1 : i - 1];
      shares.merge(owners[i], unsignedToDouble(arc) / TWO_TO_64, Double::sum);
    }
    return shares;
  }

  private static double unsignedToDouble(long value) {
    return (value >>> 1) * 2.0 + (value & 1);
  }

  /** Returns the peers on this ring, sorted. */
  public List<String> peers() {
    return peers;
  }

  /** Returns the hash that places keys and points on this ring. */
  public PeerHash hash() {
    return hash;
  }

  /** Returns how many points each peer has on this ring. */
  public int replicas() {
    return replicas;
  }

  /** Returns whether {@code address} is one of this ring's peers. */
  public boolean contains(String address) {
    return peers.contains(address);
  }

  /** Returns whether the ring has no peers. */
  public boolean isEmpty() {
    return peers.isEmpty();
  }

  /**
   * Returns a ring with the same settings and peers {@code newPeers} (duplicates ignored). Like
   * {@link #of}, it does not apply {@link #MAX_POINTS}: a ring from an untrusted source is checked
   * with {@link #checkPoints} first.
   *
   * @throws IllegalArgumentException when the ring would have more points than an array holds
   */
  public HashRing withPeers(Collection<String> newPeers) {
    return new HashRing(newPeers, replicas, hash);
  }

  /** Returns a ring with the same settings without {@code address}. */
  public HashRing without(String address) {
    Set<String> rest = new TreeSet<>(peers);
    rest.remove(address);
    return new HashRing(rest, replicas, hash);
  }

  private static String md5Hex(String address) {
    try {
      byte[] digest =
          MessageDigest.getInstance("MD5").digest(address.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("MD5 is required of every JVM", e);
    }
  }
}
