package dev.weir.core.cluster;

import dev.weir.core.cluster.peer.PeerClientSettings;
import dev.weir.core.cluster.ring.PeerHash;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The cluster's settings, read from {@code WEIR_*} variables (or their Gubernator {@code GUBER_*}
 * aliases).
 *
 * @param replicas virtual nodes per peer on the hash ring
 * @param hash the ring's hash function
 * @param batchLimit the most forwarded items per peer call, 1..1000
 * @param batchWait how long the first queued forwarded item waits for others
 * @param batchTimeout the deadline of each forwarding call
 * @param disableBatching send every forwarded item alone at once
 * @param globalSyncWait how long GLOBAL hits and broadcasts wait before they are sent
 * @param globalBatchLimit the number of queued GLOBAL keys that sends them at once, 1..1000
 * @param globalTimeout the deadline of GLOBAL hit and broadcast calls
 * @param discoveryType how peers are found ({@code static} here)
 * @param staticPeers the gRPC addresses of all nodes for static discovery; empty means this node alone
 * @param handoff whether buckets move to their new owner when the ring changes and on shutdown
 */
public record ClusterSettings(
    int replicas,
    PeerHash hash,
    int batchLimit,
    Duration batchWait,
    Duration batchTimeout,
    boolean disableBatching,
    Duration globalSyncWait,
    int globalBatchLimit,
    Duration globalTimeout,
    String discoveryType,
    List<String> staticPeers,
    boolean handoff) {

  /** Validates and copies the settings. */
  public ClusterSettings {
    if (replicas < 1) {
      throw new IllegalArgumentException("replicas must be at least 1, got " + replicas);
    }
    if (batchLimit < 1 || batchLimit > 1000) {
      throw new IllegalArgumentException("batchLimit must be within 1..1000, got " + batchLimit);
    }
    if (globalBatchLimit < 1 || globalBatchLimit > 1000) {
      throw new IllegalArgumentException(
          "globalBatchLimit must be within 1..1000, got " + globalBatchLimit);
    }
    staticPeers = List.copyOf(staticPeers);
  }

  /** Returns Gubernator's defaults: 512 FNV-1a replicas, 1000 items / 500 µs / 500 ms, 100 ms GLOBAL sync. */
  public static ClusterSettings defaults() {
    return new ClusterSettings(
        512,
        PeerHash.FNV1A,
        1000,
        Duration.ofNanos(500_000),
        Duration.ofMillis(500),
        false,
        Duration.ofMillis(100),
        1000,
        Duration.ofMillis(500),
        "static",
        List.of(),
        true);
  }

  /** Returns the settings the peer clients use. */
  public PeerClientSettings peerClientSettings() {
    return new PeerClientSettings(batchLimit, batchWait, batchTimeout, disableBatching);
  }

  /** Returns a copy with {@code newPeers} as the static peers. */
  public ClusterSettings withStaticPeers(List<String> newPeers) {
    return new ClusterSettings(
        replicas, hash, batchLimit, batchWait, batchTimeout, disableBatching, globalSyncWait,
        globalBatchLimit, globalTimeout, discoveryType, newPeers, handoff);
  }

  /** Returns a copy with hand-off turned on or off. */
  public ClusterSettings withHandoff(boolean enabled) {
    return new ClusterSettings(
        replicas, hash, batchLimit, batchWait, batchTimeout, disableBatching, globalSyncWait,
        globalBatchLimit, globalTimeout, discoveryType, staticPeers, enabled);
  }

  /** Returns a copy with batching turned off or on. */
  public ClusterSettings withDisableBatching(boolean disabled) {
    return new ClusterSettings(
        replicas, hash, batchLimit, batchWait, batchTimeout, disabled, globalSyncWait,
        globalBatchLimit, globalTimeout, discoveryType, staticPeers, handoff);
  }

  /**
   * Reads the settings from {@code env}; unset variables keep their defaults.
   *
   * @throws IllegalArgumentException with one line naming the variable, its value and what is allowed
   */
  public static ClusterSettings fromEnv(Map<String, String> env) {
    ClusterSettings d = defaults();
    Reader r = new Reader(env);
    String discovery = r.string("PEER_DISCOVERY_TYPE", d.discoveryType).toLowerCase(Locale.ROOT);
    if (!discovery.equals("static")) {
      throw new IllegalArgumentException(
          r.nameOf("PEER_DISCOVERY_TYPE") + "='" + discovery + "' is not supported; allowed: static");
    }
    String peers = r.string("STATIC_PEERS", "");
    List<String> peerList =
        Arrays.stream(peers.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
    return new ClusterSettings(
        r.intIn("REPLICATED_HASH_REPLICAS", d.replicas, 1, 1 << 16),
        r.hash("PEER_PICKER_HASH", d.hash),
        r.intIn("BATCH_LIMIT", d.batchLimit, 1, 1000),
        r.duration("BATCH_WAIT", d.batchWait),
        r.duration("BATCH_TIMEOUT", d.batchTimeout),
        r.bool("DISABLE_BATCHING", d.disableBatching),
        r.duration("GLOBAL_SYNC_WAIT", d.globalSyncWait),
        r.intIn("GLOBAL_BATCH_LIMIT", d.globalBatchLimit, 1, 1000),
        r.duration("GLOBAL_TIMEOUT", d.globalTimeout),
        discovery,
        peerList,
        r.bool("HANDOFF", d.handoff));
  }

  /** Reads {@code WEIR_<name>}, falling back to {@code GUBER_<name>}. */
  private static final class Reader {
    private static final Pattern DURATION_PART = Pattern.compile("(\\d+(?:\\.\\d+)?)(ns|us|µs|ms|s|m|h)");

    private final Map<String, String> env;

    Reader(Map<String, String> env) {
      this.env = env;
    }

    String nameOf(String name) {
      return env.containsKey("WEIR_" + name) || !env.containsKey("GUBER_" + name)
          ? "WEIR_" + name
          : "GUBER_" + name;
    }

    String string(String name, String fallback) {
      String v = env.get("WEIR_" + name);
      if (v == null) {
        v = env.get("GUBER_" + name);
      }
      return v == null || v.isBlank() ? fallback : v.trim();
    }

    int intIn(String name, int fallback, int min, int max) {
      String v = string(name, null);
      if (v == null) {
        return fallback;
      }
      try {
        int i = Integer.parseInt(v);
        if (i >= min && i <= max) {
          return i;
        }
      } catch (NumberFormatException e) {
        // reported below
      }
      throw bad(name, v, "an integer within " + min + ".." + max);
    }

    boolean bool(String name, boolean fallback) {
      String v = string(name, null);
      if (v == null) {
        return fallback;
      }
      switch (v.toLowerCase(Locale.ROOT)) {
        case "true", "1", "yes", "on":
          return true;
        case "false", "0", "no", "off":
          return false;
        default:
          throw bad(name, v, "true or false");
      }
    }

    PeerHash hash(String name, PeerHash fallback) {
      String v = string(name, null);
      if (v == null) {
        return fallback;
      }
      try {
        return PeerHash.parse(v);
      } catch (IllegalArgumentException e) {
        throw bad(name, v, "fnv1a, fnv1");
      }
    }

    Duration duration(String name, Duration fallback) {
      String v = string(name, null);
      if (v == null) {
        return fallback;
      }
      Matcher m = DURATION_PART.matcher(v);
      long nanos = 0;
      int end = 0;
      while (m.find() && m.start() == end) {
        double amount = Double.parseDouble(m.group(1));
        nanos += (long) (amount * unitNanos(m.group(2)));
        end = m.end();
      }
      if (end != v.length() || end == 0 || nanos <= 0) {
        throw bad(name, v, "a positive duration such as 500us, 100ms, 5s");
      }
      return Duration.ofNanos(nanos);
    }

    private static long unitNanos(String unit) {
      switch (unit) {
        case "ns":
          return 1L;
        case "us", "µs":
          return 1_000L;
        case "ms":
          return 1_000_000L;
        case "s":
          return 1_000_000_000L;
        case "m":
          return 60_000_000_000L;
        default:
          return 3_600_000_000_000L;
      }
    }

    private IllegalArgumentException bad(String name, String value, String allowed) {
      return new IllegalArgumentException(
          nameOf(name) + "='" + value + "' is invalid; allowed: " + allowed);
    }
  }
}
