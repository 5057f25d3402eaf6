package dev.weir.core;

import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.batch.ExecutorScheduler;
import dev.weir.core.config.HostPort;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.store.BucketStore;
import dev.weir.core.store.CaffeineBucketStore;
import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import io.grpc.ChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.time.ZoneId;
import java.util.List;
import java.util.Objects;

/**
 * The entry point for running Weir inside a JVM service: {@link #builder()} makes a {@link
 * WeirMember}, a full member of a cluster (the same ownership, batching, GLOBAL behavior and
 * hand-off as a stand-alone node, which is built on this same entry point).
 *
 * <p>A member of a two-member cluster that admits 100 requests per second per account:
 *
 * <pre>{@code
 * try (RateLimiter limiter =
 *     Weir.builder().advertiseAddress(self).staticPeers(List.of(self, other)).start()) {
 *   RateLimitRequest request =
 *       RateLimitRequest.builder("requests_per_sec", "account:" + accountId)
 *           .limit(100)
 *           .duration(1000)
 *           .build();
 *   RateLimitResponse response = limiter.check(request).join();
 *   return response.status() == Status.UNDER_LIMIT;
 * }
 * }</pre>
 */
public final class Weir {

  /** The default most buckets kept in memory: 50,000, Gubernator's {@code GUBER_CACHE_SIZE}. */
  public static final long DEFAULT_CACHE_SIZE = 50_000;

  /** The default longest wait for each step of leaving the cluster on close: 5 s. */
  public static final Duration DEFAULT_LEAVE_WAIT = Duration.ofSeconds(5);

  private Weir() {}

  /** Returns a builder of a cluster member; every setting has a default. */
  public static Builder builder() {
    return new Builder();
  }

  /** Configures a {@link WeirMember}. */
  public static final class Builder {
    private HostPort advertiseAddress;
    private HostPort listenAddress;
    private List<String> staticPeers;
    private PeerDiscovery discovery;
    private long cacheSize = DEFAULT_CACHE_SIZE;
    private BucketStore store;
    private ClusterSettings clusterSettings = ClusterSettings.defaults();
    private ServerBuilder<?> serverBuilder;
    private Clock clock = SystemClock.INSTANCE;
    private ZoneId zone = ZoneId.systemDefault();
    private Duration leaveWait = DEFAULT_LEAVE_WAIT;
    private ChannelCredentials credentials = InsecureChannelCredentials.create();

    private Builder() {}

    /**
     * Sets the {@code host:port} the other members reach this member's gRPC server on (default
     * {@code 127.0.0.1:0}). Port 0 takes a free port, unless a {@link #serverBuilder} is given,
     * which needs the real port. The host is advertised as given: name one the other members can
     * reach, not a wildcard such as {@code 0.0.0.0} (bind that with {@link #listenAddress}).
     */
    public Builder advertiseAddress(String hostPort) {
      this.advertiseAddress = parse("advertiseAddress", hostPort);
      return this;
    }

    /**
     * Sets the {@code host:port} the member's own gRPC server binds (default: the advertise
     * address); {@code 0.0.0.0:1051} binds every interface. Ignored with a {@link #serverBuilder}.
     */
    public Builder listenAddress(String hostPort) {
      this.listenAddress = parse("listenAddress", hostPort);
      return this;
    }

    /**
     * Sets the advertise addresses of every member, this one included; the same list on every
     * member. Excludes {@link #discovery}. Default: this member alone.
     */
    public Builder staticPeers(List<String> peers) {
      this.staticPeers = List.copyOf(peers);
      return this;
    }

    /**
     * Finds the members with {@code peerDiscovery} (etcd, Kubernetes, DNS or your own), which the
     * member starts on {@link WeirMember#start()} and closes on {@link WeirMember#close()}.
     * Excludes {@link #staticPeers}.
     */
    public Builder discovery(PeerDiscovery peerDiscovery) {
      this.discovery = Objects.requireNonNull(peerDiscovery, "discovery");
      return this;
    }

    /** Sets the most buckets kept in memory, at least 1 (default 50,000). */
    public Builder cacheSize(long value) {
      if (value < 1) {
        throw new IllegalArgumentException("cacheSize must be at least 1, got " + value);
      }
      this.cacheSize = value;
      return this;
    }

    /** Keeps buckets in {@code bucketStore} instead of a Caffeine cache of {@link #cacheSize}. */
    public Builder store(BucketStore bucketStore) {
      this.store = Objects.requireNonNull(bucketStore, "store");
      return this;
    }

    /**
     * Sets the ring, batching, GLOBAL and hand-off settings (default {@link
     * ClusterSettings#defaults()}: 1000 items or 500 µs per forwarding call). Their static peers
     * are used when neither {@link #staticPeers} nor {@link #discovery} is set.
     */
    public Builder clusterSettings(ClusterSettings settings) {
      this.clusterSettings = Objects.requireNonNull(settings, "clusterSettings");
      return this;
    }

    /**
     * Serves {@code PeersV1} on a server built from {@code builder} (with whatever services the
     * caller added to it) instead of on a server of the member's own. The member builds and starts
     * the server on {@link WeirMember#start()} and stops it on {@link WeirMember#close()}; the
     * {@link #advertiseAddress} must then name the server's real port.
     */
    public Builder serverBuilder(ServerBuilder<?> builder) {
      this.serverBuilder = Objects.requireNonNull(builder, "serverBuilder");
      return this;
    }

    /** Sets the time the member decides at (default the system clock). */
    public Builder clock(Clock value) {
      this.clock = Objects.requireNonNull(value, "clock");
      return this;
    }

    /** Sets the time zone of Gregorian durations (default the system's). */
    public Builder zone(ZoneId value) {
      this.zone = Objects.requireNonNull(value, "zone");
      return this;
    }

    /** Sets the longest wait for each step of leaving the cluster on close (default 5 s). */
    public Builder leaveWait(Duration value) {
      if (value.isNegative()) {
        throw new IllegalArgumentException("leaveWait must be zero or more, got " + value);
      }
      this.leaveWait = value;
      return this;
    }

    /**
     * Sets the credentials this member calls its peers with (default plaintext); with TLS on, pass
     * credentials carrying this member's certificate so peers requiring mutual TLS accept it.
     */
    public Builder peerCredentials(ChannelCredentials value) {
      this.credentials = Objects.requireNonNull(value, "peerCredentials");
      return this;
    }

    /**
     * Creates the member without starting it (no port is bound yet), so that its {@link
     * WeirMember#service()} can back other services added to the server builder first.
     *
     * @throws IllegalStateException when settings contradict each other
     */
    public WeirMember build() {
      if (staticPeers != null && discovery != null) {
        throw new IllegalStateException(
            "set staticPeers or discovery, not both; got staticPeers " + staticPeers);
      }
      HostPort advertise =
          advertiseAddress == null ? new HostPort("127.0.0.1", 0) : advertiseAddress;
      ServerBuilder<?> server = serverBuilder;
      if (server == null) {
        HostPort listen = listenAddress == null ? advertise : listenAddress;
        if (listen.port() == 0) {
          listen = listen.withPort(freePort(listen.toBindAddress()));
        }
        if (advertise.port() == 0) {
          advertise = advertise.withPort(listen.port());
        }
        server = NettyServerBuilder.forAddress(listen.toBindAddress());
      } else if (advertise.port() == 0) {
        throw new IllegalStateException(
            "advertiseAddress must name the port of the given serverBuilder's server, got "
                + advertise);
      }
      String self = advertise.toString();
      BucketStore buckets = store == null ? new CaffeineBucketStore(clock, cacheSize) : store;
      LocalLimiter limiter = new LocalLimiter(new RateLimitEngine(zone), buckets, clock);
      PeerDiscovery peers =
          discovery != null
              ? discovery
              : new StaticDiscovery(
                  self, staticPeers != null ? staticPeers : clusterSettings.staticPeers());
      ExecutorScheduler scheduler = new ExecutorScheduler("weir-cluster", 2);
      ClusterNode cluster =
          new ClusterNode(
              self, clusterSettings, buckets, limiter::apply, scheduler, clock, peers, credentials);
      return new WeirMember(cluster, scheduler, peers, server, advertise, leaveWait);
    }

    /**
     * Creates and starts the member: binds its gRPC server and joins the cluster.
     *
     * @throws IOException when the server cannot bind or the discovery cannot start
     */
    public WeirMember start() throws IOException {
      return build().start();
    }

    private static HostPort parse(String field, String hostPort) {
      try {
        return HostPort.parse(Objects.requireNonNull(hostPort, field));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            field + " must be host:port, got \"" + hostPort + "\": " + e.getMessage(), e);
      }
    }

    private static int freePort(InetSocketAddress address) {
      try (ServerSocket socket = new ServerSocket(0, 1, address.getAddress())) {
        return socket.getLocalPort();
      } catch (IOException e) {
        throw new UncheckedIOException("cannot find a free port on " + address, e);
      }
    }
  }
}
