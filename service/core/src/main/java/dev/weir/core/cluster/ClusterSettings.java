package dev.weir.core.cluster;

import dev.weir.core.cluster.peer.PeerClientSettings;
import dev.weir.core.cluster.peer.PeerFailureMode;
import dev.weir.core.cluster.snapshot.SnapshotDirectory;
import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * The cluster's settings, read from {@code WEIR_*} variables (or their Gubernator {@code GUBER_*}
 * aliases).
 *
 * @param replicas virtual nodes per peer on the hash ring
 * @param hash the ring's hash function
 * @param batchLimit the most forwarded items per peer call,
 *     1..{@value RateLimitService#MAX_BATCH_SIZE}
 * @param batchWait how long forwarded items queued behind a batch in flight wait before an item
 *     that comes opens another call (items with none after them leave at the next answer or
 *     {@code batchTimeout})
 * @param batchTimeout the deadline of each forwarding call
 * @param disableBatching send every forwarded item alone at once
 * @param globalSyncWait how long GLOBAL hits and broadcasts wait before they are sent
 * @param globalBatchLimit the number of queued GLOBAL keys that sends them at once,
 *     1..{@value RateLimitService#MAX_BATCH_SIZE}
 * @param globalTimeout the deadline of GLOBAL hit and broadcast calls
 * @param discoveryType how peers are found ({@code static} here)
 * @param staticPeers the gRPC addresses of all nodes for static discovery, each optionally with
 *     {@code @peerPort} (see {@link StaticDiscovery}); empty means this node alone
 * @param handoff whether buckets move to their new owner when the ring changes and on shutdown
 * @param peerFailureMode what the keys of a peer found down get while it is down
 * @param standInAfter how long after a call its forwarded items wait for their owners before this
 *     node answers them from a bucket of its own; zero: they wait for the owners or the deadline
 * @param snapshotDir where each node saves its buckets on a graceful stop and loads them on start
 *     ({@code WEIR_SNAPSHOT_DIR}); empty: no snapshots
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
    boolean handoff,
    PeerFailureMode peerFailureMode,
    Duration standInAfter,
    Optional<Path> snapshotDir) {

  /** Validates and copies the settings. */
  public ClusterSettings {
    Objects.requireNonNull(peerFailureMode, "peerFailureMode");
    Objects.requireNonNull(snapshotDir, "snapshotDir");
    if (standInAfter.isNegative()) {
      throw new IllegalArgumentException("standInAfter must not be negative, got " + standInAfter);
    }
    if (replicas < 1) {
      throw new IllegalArgumentException("replicas must be at least 1, got " + replicas);
    }
    requireBatchLimit("batchLimit", batchLimit);
    requireBatchLimit("globalBatchLimit", globalBatchLimit);
    staticPeers = List.copyOf(staticPeers);
  }

  private static void requireBatchLimit(String name, int value) {
    if (value < 1 || value > RateLimitService.MAX_BATCH_SIZE) {
      throw new IllegalArgumentException(
          name + " must be within 1.." + RateLimitService.MAX_BATCH_SIZE + ", got " + value);
    }
  }

  /** Creates the settings without snapshots. */
  public ClusterSettings(
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
      boolean handoff,
      PeerFailureMode peerFailureMode,
      Duration standInAfter) {
    this(
        replicas, hash, batchLimit, batchWait, batchTimeout, disableBatching, globalSyncWait,
        globalBatchLimit, globalTimeout, discoveryType, staticPeers, handoff, peerFailureMode,
        standInAfter, Optional.empty());
  }

  /** Creates the settings without stand-ins. */
  public ClusterSettings(
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
      boolean handoff,
      PeerFailureMode peerFailureMode) {
    this(
        replicas, hash, batchLimit, batchWait, batchTimeout, disableBatching, globalSyncWait,
        globalBatchLimit, globalTimeout, discoveryType, staticPeers, handoff, peerFailureMode,
        Duration.ZERO);
  }

  /** Creates the settings with the default failure mode, {@link PeerFailureMode#REROUTE}. */
  public ClusterSettings(
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
    this(
        replicas, hash, batchLimit, batchWait, batchTimeout, disableBatching, globalSyncWait,
        globalBatchLimit, globalTimeout, discoveryType, staticPeers, handoff,
        PeerFailureMode.REROUTE);
  }

  /**
   * Returns the defaults: a ring of 4096 FNV-1a-fmix64 points per peer (Gubernator's is 512 FNV-1a
   * points, which spreads similar keys unevenly), and Gubernator's batching (1000 items / 500 µs /
   * 500 ms) and GLOBAL sync (100 ms).
   */
  public static ClusterSettings defaults() {
    return new ClusterSettings(
        4096,
        PeerHash.FNV1A_FMIX64,
        RateLimitService.MAX_BATCH_SIZE,
        Duration.ofNanos(500_000),
        Duration.ofMillis(500),
        false,
        Duration.ofMillis(100),
        RateLimitService.MAX_BATCH_SIZE,
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
    return toBuilder().staticPeers(newPeers).build();
  }

  /** Returns a copy with hand-off turned on or off. */
  public ClusterSettings withHandoff(boolean enabled) {
    return toBuilder().handoff(enabled).build();
  }

  /** Returns a copy with batching turned off or on. */
  public ClusterSettings withDisableBatching(boolean disabled) {
    return toBuilder().disableBatching(disabled).build();
  }

  /** Returns a copy with {@code mode} as the peer failure mode. */
  public ClusterSettings withPeerFailureMode(PeerFailureMode mode) {
    return toBuilder().peerFailureMode(mode).build();
  }

  /** Returns a copy whose forwarded items are answered by a stand-in after {@code wait}. */
  public ClusterSettings withStandInAfter(Duration wait) {
    return toBuilder().standInAfter(wait).build();
  }

  /** Returns a copy whose nodes keep snapshots in {@code dir} (empty: none). */
  public ClusterSettings withSnapshotDir(Optional<Path> dir) {
    return toBuilder().snapshotDir(dir).build();
  }

  /** Returns a builder holding these settings, to copy them with some changed. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /**
   * A builder of {@link ClusterSettings}, started from existing settings by {@link #toBuilder()};
   * each setter replaces one component and {@link #build()} validates them all.
   */
  public static final class Builder {
    private int replicas;
    private PeerHash hash;
    private int batchLimit;
    private Duration batchWait;
    private Duration batchTimeout;
    private boolean disableBatching;
    private Duration globalSyncWait;
    private int globalBatchLimit;
    private Duration globalTimeout;
    private String discoveryType;
    private List<String> staticPeers;
    private boolean handoff;
    private PeerFailureMode peerFailureMode;
    private Duration standInAfter;
    private Optional<Path> snapshotDir;

    private Builder(ClusterSettings s) {
      replicas = s.replicas;
      hash = s.hash;
      batchLimit = s.batchLimit;
      batchWait = s.batchWait;
      batchTimeout = s.batchTimeout;
      disableBatching = s.disableBatching;
      globalSyncWait = s.globalSyncWait;
      globalBatchLimit = s.globalBatchLimit;
      globalTimeout = s.globalTimeout;
      discoveryType = s.discoveryType;
      staticPeers = s.staticPeers;
      handoff = s.handoff;
      peerFailureMode = s.peerFailureMode;
      standInAfter = s.standInAfter;
      snapshotDir = s.snapshotDir;
    }

    /** Sets {@link ClusterSettings#replicas()}. */
    public Builder replicas(int value) {
      replicas = value;
      return this;
    }

    /** Sets {@link ClusterSettings#hash()}. */
    public Builder hash(PeerHash value) {
      hash = value;
      return this;
    }

    /** Sets {@link ClusterSettings#batchLimit()}. */
    public Builder batchLimit(int value) {
      batchLimit = value;
      return this;
    }

    /** Sets {@link ClusterSettings#batchWait()}. */
    public Builder batchWait(Duration value) {
      batchWait = value;
      return this;
    }

    /** Sets {@link ClusterSettings#batchTimeout()}. */
    public Builder batchTimeout(Duration value) {
      batchTimeout = value;
      return this;
    }

    /** Sets {@link ClusterSettings#disableBatching()}. */
    public Builder disableBatching(boolean value) {
      disableBatching = value;
      return this;
    }

    /** Sets {@link ClusterSettings#globalSyncWait()}. */
    public Builder globalSyncWait(Duration value) {
      globalSyncWait = value;
      return this;
    }

    /** Sets {@link ClusterSettings#globalBatchLimit()}. */
    public Builder globalBatchLimit(int value) {
      globalBatchLimit = value;
      return this;
    }

    /** Sets {@link ClusterSettings#globalTimeout()}. */
    public Builder globalTimeout(Duration value) {
      globalTimeout = value;
      return this;
    }

    /** Sets {@link ClusterSettings#discoveryType()}. */
    public Builder discoveryType(String value) {
      discoveryType = value;
      return this;
    }

    /** Sets {@link ClusterSettings#staticPeers()}. */
    public Builder staticPeers(List<String> value) {
      staticPeers = value;
      return this;
    }

    /** Sets {@link ClusterSettings#handoff()}. */
    public Builder handoff(boolean value) {
      handoff = value;
      return this;
    }

    /** Sets {@link ClusterSettings#peerFailureMode()}. */
    public Builder peerFailureMode(PeerFailureMode value) {
      peerFailureMode = value;
      return this;
    }

    /** Sets {@link ClusterSettings#standInAfter()}. */
    public Builder standInAfter(Duration value) {
      standInAfter = value;
      return this;
    }

    /** Sets {@link ClusterSettings#snapshotDir()}. */
    public Builder snapshotDir(Optional<Path> value) {
      snapshotDir = value;
      return this;
    }

    /**
     * Returns the settings built.
     *
     * @throws IllegalArgumentException if a component is outside what {@link ClusterSettings}
     *     allows
     */
    public ClusterSettings build() {
      return new ClusterSettings(
          replicas,
          hash,
          batchLimit,
          batchWait,
          batchTimeout,
          disableBatching,
          globalSyncWait,
          globalBatchLimit,
          globalTimeout,
          discoveryType,
          staticPeers,
          handoff,
          peerFailureMode,
          standInAfter,
          snapshotDir);
    }
  }

  /** {@code WEIR_REPLICATED_HASH_REPLICAS}, alias {@code GUBER_REPLICATED_HASH_REPLICAS}. */
  public static final EnvVar REPLICAS =
      EnvVar.of("WEIR_REPLICATED_HASH_REPLICAS", "GUBER_REPLICATED_HASH_REPLICAS");

  /** {@code WEIR_PEER_PICKER_HASH}, alias {@code GUBER_PEER_PICKER_HASH}. */
  public static final EnvVar PICKER_HASH =
      EnvVar.of("WEIR_PEER_PICKER_HASH", "GUBER_PEER_PICKER_HASH");

  /** {@code WEIR_BATCH_LIMIT}, alias {@code GUBER_BATCH_LIMIT}. */
  public static final EnvVar BATCH_LIMIT = EnvVar.of("WEIR_BATCH_LIMIT", "GUBER_BATCH_LIMIT");
  /** {@code WEIR_BATCH_WAIT}, alias {@code GUBER_BATCH_WAIT}. */
  public static final EnvVar BATCH_WAIT = EnvVar.of("WEIR_BATCH_WAIT", "GUBER_BATCH_WAIT");
  /** {@code WEIR_BATCH_TIMEOUT}, alias {@code GUBER_BATCH_TIMEOUT}. */
  public static final EnvVar BATCH_TIMEOUT = EnvVar.of("WEIR_BATCH_TIMEOUT", "GUBER_BATCH_TIMEOUT");
  /** {@code WEIR_DISABLE_BATCHING}, alias {@code GUBER_DISABLE_BATCHING}. */
  public static final EnvVar DISABLE_BATCHING =
      EnvVar.of("WEIR_DISABLE_BATCHING", "GUBER_DISABLE_BATCHING");
  /** {@code WEIR_GLOBAL_SYNC_WAIT}, alias {@code GUBER_GLOBAL_SYNC_WAIT}. */
  public static final EnvVar GLOBAL_SYNC_WAIT =
      EnvVar.of("WEIR_GLOBAL_SYNC_WAIT", "GUBER_GLOBAL_SYNC_WAIT");
  /** {@code WEIR_GLOBAL_BATCH_LIMIT}, alias {@code GUBER_GLOBAL_BATCH_LIMIT}. */
  public static final EnvVar GLOBAL_BATCH_LIMIT =
      EnvVar.of("WEIR_GLOBAL_BATCH_LIMIT", "GUBER_GLOBAL_BATCH_LIMIT");

  /** {@code WEIR_GLOBAL_TIMEOUT}, alias {@code GUBER_GLOBAL_TIMEOUT}. */
  public static final EnvVar GLOBAL_TIMEOUT =
      EnvVar.of("WEIR_GLOBAL_TIMEOUT", "GUBER_GLOBAL_TIMEOUT");

  /** {@code WEIR_PEER_DISCOVERY_TYPE}, alias {@code GUBER_PEER_DISCOVERY_TYPE}. */
  public static final EnvVar DISCOVERY_TYPE =
      EnvVar.of("WEIR_PEER_DISCOVERY_TYPE", "GUBER_PEER_DISCOVERY_TYPE");
  /** {@code WEIR_STATIC_PEERS} (Gubernator has no static discovery, hence no alias). */
  public static final EnvVar STATIC_PEERS = EnvVar.of("WEIR_STATIC_PEERS");
  /** {@code WEIR_HANDOFF} (Weir only). */
  public static final EnvVar HANDOFF = EnvVar.of("WEIR_HANDOFF");
  /** {@code WEIR_PEER_FAILURE_MODE} (Weir only): {@code reroute} or {@code fail}. */
  public static final EnvVar PEER_FAILURE_MODE = EnvVar.of("WEIR_PEER_FAILURE_MODE");
  /** {@code WEIR_FORWARD_STAND_IN_AFTER} (Weir only): {@code 0s}, off, by default. */
  public static final EnvVar FORWARD_STAND_IN_AFTER = EnvVar.of("WEIR_FORWARD_STAND_IN_AFTER");
  /** {@code WEIR_SNAPSHOT_DIR} (Weir only). */
  public static final EnvVar SNAPSHOT_DIR = SnapshotDirectory.VARIABLE;

  /**
   * The shortest {@code WEIR_BATCH_WAIT} and {@code WEIR_GLOBAL_SYNC_WAIT}: 1ns, so that the 500ns
   * of Gubernator's {@code example.conf} reads.
   */
  private static final Duration MIN_WAIT = Duration.ofNanos(1);
  private static final Duration MAX_WAIT = Duration.ofMinutes(1);

  /**
   * Reads the settings from {@code env}; unset variables keep their defaults. {@code discoveryTypes}
   * lists the discovery types this build offers (the first is the default).
   *
   * @throws dev.weir.core.config.ConfigException naming the variable, its value and what is allowed
   */
  public static ClusterSettings from(EnvReader env, List<String> discoveryTypes) {
    ClusterSettings d = defaults();
    String hashName =
        env.oneOf(PICKER_HASH, d.hash.settingName(), PeerHash.settingNames());
    List<String> peers =
        Arrays.stream(env.string(STATIC_PEERS, "").split(","))
            .map(String::trim)
            .filter(p -> !p.isEmpty())
            .toList();
    for (String peer : peers) {
      try {
        StaticDiscovery.parse(peer);
      } catch (IllegalArgumentException e) {
        throw new ConfigException(
            STATIC_PEERS.name()
                + "='"
                + env.string(STATIC_PEERS, "")
                + "' is not valid: "
                + e.getMessage());
      }
    }
    return new ClusterSettings(
        env.intInRange(REPLICAS, d.replicas, 1, HashRing.MAX_REPLICAS),
        PeerHash.parse(hashName),
        env.intInRange(BATCH_LIMIT, d.batchLimit, 1, RateLimitService.MAX_BATCH_SIZE),
        env.duration(BATCH_WAIT, d.batchWait, MIN_WAIT, MAX_WAIT),
        env.duration(BATCH_TIMEOUT, d.batchTimeout, Duration.ofMillis(1), MAX_WAIT),
        env.bool(DISABLE_BATCHING, d.disableBatching),
        env.duration(GLOBAL_SYNC_WAIT, d.globalSyncWait, MIN_WAIT, MAX_WAIT),
        env.intInRange(
            GLOBAL_BATCH_LIMIT, d.globalBatchLimit, 1, RateLimitService.MAX_BATCH_SIZE),
        env.duration(GLOBAL_TIMEOUT, d.globalTimeout, Duration.ofMillis(1), MAX_WAIT),
        env.oneOf(DISCOVERY_TYPE, discoveryTypes.get(0), discoveryTypes),
        peers,
        env.bool(HANDOFF, d.handoff),
        PeerFailureMode.valueOf(
            env.oneOf(
                    PEER_FAILURE_MODE,
                    d.peerFailureMode.value(),
                    Arrays.stream(PeerFailureMode.values()).map(PeerFailureMode::value).toList())
                .toUpperCase(Locale.ROOT)),
        env.duration(FORWARD_STAND_IN_AFTER, d.standInAfter, Duration.ZERO, MAX_WAIT),
        env.path(SNAPSHOT_DIR));
  }
}
