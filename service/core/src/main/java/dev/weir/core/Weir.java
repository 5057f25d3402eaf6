package dev.weir.core;

import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.peer.PeerAddressBook;
import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.cluster.peer.PeerListener;
import dev.weir.core.cluster.peer.auth.PeerIdentities;
import dev.weir.core.cluster.peer.auth.PeerSecret;
import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.cluster.peer.auth.PeerTls;
import dev.weir.core.cluster.snapshot.SnapshotDirectory;
import dev.weir.core.config.HostPort;
import dev.weir.core.discovery.PeerAddress;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.store.BucketStore;
import dev.weir.core.store.ClockBucketStore;
import dev.weir.core.time.Clock;
import dev.weir.core.time.ExecutorScheduler;
import dev.weir.core.time.SystemClock;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.ZoneId;
import java.util.List;
import java.util.Objects;
import java.util.function.IntFunction;
import org.slf4j.event.Level;

/**
 * The entry point for running Weir inside a JVM service: {@link #builder()} makes a {@link
 * WeirMember}, a full member of a cluster (the same ownership, batching, GLOBAL behavior and
 * hand-off as a stand-alone node, which is built on this same entry point).
 *
 * <p>A member of a two-member cluster that admits 100 requests per second per account (the members
 * share {@code secret}, which proves to each that a call comes from the other):
 *
 * <pre>{@code
 * try (RateLimiter limiter =
 *     Weir.builder()
 *         .advertiseAddress(self)
 *         .staticPeers(List.of(self, other))
 *         .peerSecret(secret)
 *         .start()) {
 *   RateLimitRequest request =
 *       RateLimitRequest.builder("requests_per_sec", "account:" + accountId)
 *           .limit(100)
 *           .duration(1000)
 *           .build();
 *   RateLimitResponse response = limiter.decide(request).join();
 *   return response.status() == Status.UNDER_LIMIT;
 * }
 * }</pre>
 *
 * <p>Do not {@code join()} (or otherwise wait for) a decision's future on a gRPC Netty event-loop
 * thread (a continuation chained without an executor, or a service method of a server built with
 * {@code directExecutor()}): an item forwarded from such a thread leaves at the end of that
 * thread's current round of work, which never comes while the thread waits, so the wait never ends.
 * Chain on the future instead, or decide on a thread of your own.
 */
public final class Weir {

  /** The default most buckets kept in memory: 50,000, Gubernator's {@code GUBER_CACHE_SIZE}. */
  public static final long DEFAULT_CACHE_SIZE = 50_000;

  /** The default longest wait for each step of leaving the cluster on close: 5 s. */
  public static final Duration DEFAULT_LEAVE_WAIT = Duration.ofSeconds(5);

  /** The longest {@link Builder#leaveWait}: 1 hour. */
  public static final Duration MAX_LEAVE_WAIT = Duration.ofHours(1);

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
    private IntFunction<PeerDiscovery> discoveryForPeerPort;
    private long cacheSize = DEFAULT_CACHE_SIZE;
    private BucketStore store;
    private ClusterSettings clusterSettings = ClusterSettings.defaults();
    private ServerBuilder<?> serverBuilder;
    private Server server;
    private Clock clock = SystemClock.INSTANCE;
    private ZoneId zone = ZoneId.systemDefault();
    private Duration leaveWait = DEFAULT_LEAVE_WAIT;
    private Level lifecycleLevel = Level.INFO;
    private HostPort peerAddress;
    private PeerSecret peerSecret;
    private PeerTls peerTls;
    private PeerIdentities peerAllowedIdentities;
    private String peerTlsServerName;
    private boolean insecurePeers;
    private WeirMetrics metrics = WeirMetrics.NOOP;
    private InputLimits inputLimits = InputLimits.DEFAULTS;

    private Builder() {}

    /**
     * Sets the {@code host:port} this member is known by in the cluster, its key on the ring
     * (default {@code 127.0.0.1:0}). Without a {@link #serverBuilder} it is also where the other
     * members call this one: the member's own server, serving the peer protocol only. Port 0 takes
     * the port that server binds, or with a started {@link #server} its port; a {@link
     * #serverBuilder} needs the real port. The host is
     * advertised as given: name one the other members can reach, not a wildcard such as {@code
     * 0.0.0.0} (bind that with {@link #listenAddress}).
     */
    public Builder advertiseAddress(String hostPort) {
      this.advertiseAddress = parse("advertiseAddress", hostPort);
      return this;
    }

    /**
     * Sets the {@code host:port} the member's own server (its peer listener) binds (default: the
     * advertise address); {@code 0.0.0.0:1051} binds every interface. Ignored with a {@link
     * #serverBuilder}.
     */
    public Builder listenAddress(String hostPort) {
      this.listenAddress = parse("listenAddress", hostPort);
      return this;
    }

    /**
     * With a {@link #serverBuilder}: sets the {@code host:port} the peer listener binds (required
     * when the member may have peers). The other members call it on the advertise address's host at
     * this port, which all members share unless discovery says otherwise (see {@link
     * PeerAddressBook}); port 0 takes a free port, which only discovery that reports peer addresses
     * (static entries with {@code @peerPort}, etcd) can pass on.
     */
    public Builder peerAddress(String hostPort) {
      this.peerAddress = parse("peerAddress", hostPort);
      return this;
    }

    /**
     * Requires every peer call to carry {@code secret} (16 to 4096 printable ASCII characters; the
     * same on every member), and sends it with this member's calls.
     */
    public Builder peerSecret(String secret) {
      try {
        return peerSecret(PeerSecret.of(Objects.requireNonNull(secret, "peerSecret")));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("peerSecret: " + e.getMessage(), e);
      }
    }

    /** Requires every peer call to carry {@code secret}, as {@link #peerSecret(String)} does. */
    public Builder peerSecret(PeerSecret secret) {
      this.peerSecret = Objects.requireNonNull(secret, "peerSecret");
      return this;
    }

    /**
     * Runs the peer protocol over mutual TLS with {@code identity}: the peer listener requires a
     * client certificate its CAs signed and carrying an allowed identity ({@link
     * #peerAllowedIdentities}, by default those of {@code identity}'s own certificate), and this
     * member calls its peers with {@code identity} (such as the {@code weir-tls} module's {@code
     * TlsIdentity}). Peers allow this member's calls by the DNS, URI and IP names of that
     * certificate whatever their allow-lists, so a member with peers refuses a certificate without
     * such a name, at {@link #build} and at reloads; a member alone takes any.
     */
    public Builder peerTls(PeerTls identity) {
      this.peerTls = Objects.requireNonNull(identity, "peerTls");
      return this;
    }

    /**
     * Sets the identities (DNS names, URIs such as SPIFFE IDs, IP addresses; {@code *} for one DNS
     * label or URI segment) a peer's certificate must carry one of; needs {@link #peerTls}.
     */
    public Builder peerAllowedIdentities(List<String> patterns) {
      return peerAllowedIdentities(PeerIdentities.of(patterns));
    }

    /**
     * Sets the DNS name this member verifies every peer's server certificate against, and sends as
     * SNI and authority, instead of the address it calls; needs {@link #peerTls}. For members
     * sharing one certificate that cannot carry each member's address, such as pods' IPs.
     *
     * @throws IllegalArgumentException when {@code name} is not a DNS name
     */
    public Builder peerTlsServerName(String name) {
      try {
        this.peerTlsServerName = PeerSecurity.checkServerName(name);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("peerTlsServerName: " + e.getMessage(), e);
      }
      return this;
    }

    /** Sets the identities a peer's certificate must carry one of, as parsed already. */
    public Builder peerAllowedIdentities(PeerIdentities identities) {
      this.peerAllowedIdentities = Objects.requireNonNull(identities, "peerAllowedIdentities");
      return this;
    }

    /**
     * Lets a member with peers run the peer protocol without {@link #peerSecret} or {@link
     * #peerTls}: anyone who reaches its peer listener can then change its membership and counters.
     * Only for networks where nothing but members can reach it.
     */
    public Builder insecurePeers(boolean value) {
      this.insecurePeers = value;
      return this;
    }

    /** Counts refused peer calls and invalid peer input in {@code sink} (default: nowhere). */
    public Builder metrics(WeirMetrics sink) {
      this.metrics = Objects.requireNonNull(sink, "metrics");
      return this;
    }

    /**
     * Sets the limits peer input is held to (key lengths, largest message; default {@link
     * InputLimits#DEFAULTS}).
     */
    public Builder inputLimits(InputLimits limits) {
      this.inputLimits = Objects.requireNonNull(limits, "inputLimits");
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

    /**
     * Finds the members with the discovery {@code forPeerPort} makes for this member's peer
     * listener port (0: no listener), for mechanisms that register it (etcd) when that port is 0
     * and so known only once {@link #build()} has bound it. As {@link #discovery(PeerDiscovery)}
     * otherwise; what {@code forPeerPort} throws fails {@code build()}.
     */
    public Builder discoveryForPeerPort(IntFunction<PeerDiscovery> forPeerPort) {
      this.discoveryForPeerPort = Objects.requireNonNull(forPeerPort, "discoveryForPeerPort");
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
     * Starts and stops, with the member, a server built from {@code builder} (with whatever
     * services the caller added to it, such as {@code pb.gubernator.V1} over {@link
     * WeirMember#service()}), instead of a server of the member's own. The peer protocol is not
     * served there but on a listener of its own at {@link #peerAddress}; the {@link
     * #advertiseAddress} must name the given server's real port.
     */
    public Builder serverBuilder(ServerBuilder<?> builder) {
      this.serverBuilder = Objects.requireNonNull(builder, "serverBuilder");
      return this;
    }

    /**
     * Stops with the member {@code started}, a gRPC server already listening, as {@link
     * #serverBuilder} does with the one it builds; an {@link #advertiseAddress} with port 0
     * advertises its port. Lets a server bind its port before the member that serves on it exists
     * (see {@code dev.weir.core.grpc.LateBoundService}).
     */
    public Builder server(Server started) {
      this.server = Objects.requireNonNull(started, "server");
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

    /**
     * Makes the member log its start, its peer changes and its leaving at DEBUG rather than INFO:
     * for a member that is a detail of its process, such as a warm-up's, whose cluster of one is
     * no news to an operator.
     */
    public Builder lifecycleAtDebug() {
      this.lifecycleLevel = Level.DEBUG;
      return this;
    }

    /**
     * Sets the longest wait for each step of leaving the cluster on close, zero to {@link
     * #MAX_LEAVE_WAIT 1 hour} (default 5 s).
     */
    public Builder leaveWait(Duration value) {
      Objects.requireNonNull(value, "leaveWait");
      if (value.isNegative() || value.compareTo(MAX_LEAVE_WAIT) > 0) {
        throw new IllegalArgumentException(
            "leaveWait must be zero or more and at most " + MAX_LEAVE_WAIT + ", got " + value);
      }
      this.leaveWait = value;
      return this;
    }

    /**
     * Creates the member without starting it, so that its {@link WeirMember#service()} can back
     * other services added to the server builder first. The only port bound here is the peer
     * listener's, when the member may have peers: it answers {@code UNAVAILABLE} until {@link
     * WeirMember#start()}, so that a member at port 0 advertises the port it holds rather than one
     * probed free and bound later, and a port in use fails here rather than after whatever the
     * caller does between build and start; {@link WeirMember#close()} releases it.
     *
     * @throws IllegalStateException when settings contradict each other
     * @throws java.io.UncheckedIOException when the peer listener cannot be bound
     */
    public WeirMember build() {
      if (staticPeers != null && (discovery != null || discoveryForPeerPort != null)) {
        throw new IllegalStateException(
            "set staticPeers or discovery, not both; got staticPeers " + staticPeers);
      }
      if (discovery != null && discoveryForPeerPort != null) {
        throw new IllegalStateException("set discovery or discoveryForPeerPort, not both");
      }
      if (serverBuilder != null && server != null) {
        throw new IllegalStateException("set serverBuilder or server, not both");
      }
      if (peerAllowedIdentities != null && peerTls == null) {
        throw new IllegalStateException("peerAllowedIdentities needs peerTls");
      }
      if (peerTlsServerName != null && peerTls == null) {
        throw new IllegalStateException("peerTlsServerName needs peerTls");
      }
      PeerListener bound = null;
      try {
        HostPort advertise =
            advertiseAddress == null ? new HostPort("127.0.0.1", 0) : advertiseAddress;
        HostPort peerListen;
        if (ownServer()) {
          if (peerAddress != null) {
            throw new IllegalStateException(
                "peerAddress needs a serverBuilder; without one the member's own server, at"
                    + " listenAddress, serves the peer protocol");
          }
          peerListen = listenAddress == null ? advertise : listenAddress;
        } else {
          if (server != null && advertise.port() == 0) {
            advertise = advertise.withPort(server.getPort());
          }
          if (advertise.port() == 0) {
            throw new IllegalStateException(
                "advertiseAddress must name the port of the given serverBuilder's server, got "
                    + advertise);
          }
          peerListen = peerAddress;
        }
        if (peerListen != null && peerListen.port() == 0) {
          bound = bindPeerListener(peerListen, security(false));
          peerListen = peerListen.withPort(bound.port());
        }
        if (advertise.port() == 0) {
          advertise = advertise.withPort(peerListen.port());
        }
        return build(advertise, peerListen, bound);
      } catch (RuntimeException e) {
        if (bound != null) {
          bound.close();
        }
        throw e;
      }
    }

    private WeirMember build(HostPort advertise, HostPort peerListen, PeerListener bound) {
      String self = advertise.toString();
      PeerDiscovery peers = discovery(self, peerListen);
      PeerListenerPlan plan;
      try {
        plan = planPeerListener(peers, self, advertise, peerListen);
      } catch (RuntimeException e) {
        if (discoveryForPeerPort != null) {
          closeMadeDiscovery(peers, e);
        }
        throw e;
      }
      if (plan.listen() == null && bound != null) {
        bound.close();
      }
      PeerListener boundHere = null;
      ExecutorScheduler scheduler = null;
      try {
        if (plan.listen() != null && bound == null) {
          boundHere = bindPeerListener(plan.listen(), plan.security());
          bound = boundHere;
        }
        BucketStore buckets = store == null ? new ClockBucketStore(clock, cacheSize) : store;
        LocalLimiter limiter = new LocalLimiter(new RateLimitEngine(zone), buckets, clock);
        scheduler = new ExecutorScheduler("weir-cluster", 2);
        PeerSecurity security = plan.security();
        PeerAddressBook book = plan.book();
        ClusterNode cluster =
            new ClusterNode(
                self,
                clusterSettings,
                buckets,
                limiter::decide,
                scheduler,
                clock,
                peers,
                member -> security.channel(book.peerAddress(member)));
        cluster.membership().logChangesAt(lifecycleLevel);
        clusterSettings
            .snapshotDir()
            .ifPresent(
                dir ->
                    cluster.useSnapshots(
                        new SnapshotDirectory(
                            dir, self, new PeerInputValidator(inputLimits, self), clock)));
        return new WeirMember(
            cluster,
            scheduler,
            peers,
            serverBuilder,
            server,
            plan.listen() == null ? null : bound,
            security,
            metrics,
            inputLimits,
            clock,
            advertise,
            leaveWait,
            lifecycleLevel);
      } catch (RuntimeException | Error e) {
        if (scheduler != null) {
          scheduler.close();
        }
        if (boundHere != null) {
          boundHere.close();
        }
        if (discoveryForPeerPort != null && e instanceof RuntimeException failure) {
          closeMadeDiscovery(peers, failure);
        }
        throw e;
      }
    }

    private PeerDiscovery discovery(String self, HostPort peerListen) {
      if (discovery != null) {
        return discovery;
      }
      if (discoveryForPeerPort != null) {
        return discoveryForPeerPort.apply(peerListen == null ? 0 : peerListen.port());
      }
      return new StaticDiscovery(
          self, staticPeers != null ? staticPeers : clusterSettings.staticPeers());
    }

    /** Closes {@code made}, the discovery made for this member, after {@code failure}. */
    private static void closeMadeDiscovery(PeerDiscovery made, RuntimeException failure) {
      try {
        made.close();
      } catch (Exception e) {
        failure.addSuppressed(e);
      }
    }

    /**
     * Binds the peer listener at {@code address} with {@code security}, answering {@code
     * UNAVAILABLE} until it serves.
     */
    private PeerListener bindPeerListener(HostPort address, PeerSecurity security) {
      try {
        return PeerListener.bind(
            address.toBindAddress(), security, metrics, PeerSecurity.MAX_MESSAGE_BYTES);
      } catch (IOException e) {
        throw new UncheckedIOException(e.getMessage(), e);
      }
    }

    /** Where the peer listener binds (null: nowhere), how it is secured and how peers are found. */
    private record PeerListenerPlan(HostPort listen, PeerSecurity security, PeerAddressBook book) {}

    private PeerListenerPlan planPeerListener(
        PeerDiscovery peers, String self, HostPort advertise, HostPort peerListen) {
      if (peers.onlySelf()) {
        return new PeerListenerPlan(null, security(false), PeerAddressBook.sameAddress(peers));
      }
      PeerSecurity security = security(true);
      if (!security.authenticated() && !insecurePeers) {
        throw new IllegalStateException(
            "a member with peers needs an authenticated peer protocol: set peerSecret or peerTls"
                + " (or insecurePeers(true) to let anyone who reaches the peer listener change"
                + " this member's membership and counters)");
      }
      if (peerListen == null) {
        throw new IllegalStateException(
            "with a serverBuilder and peers, set peerAddress: the host:port of the peer listener");
      }
      PeerAddressBook book =
          ownServer()
              ? PeerAddressBook.sameAddress(peers)
              : PeerAddressBook.sharedPort(peers, peerListen.port());
      String own =
          ownServer() ? self : PeerAddress.of(advertise.host(), peerListen.port());
      String listed = book.peerAddress(self);
      if (!listed.equals(own)) {
        throw new IllegalStateException(
            "the peers list this member ("
                + self
                + ") with peer listener "
                + listed
                + ", but it listens for peers at "
                + own);
      }
      return new PeerListenerPlan(peerListen, security, book);
    }

    /** Whether the member's own server, its peer listener, is the one it is called on. */
    private boolean ownServer() {
      return serverBuilder == null && server == null;
    }

    /**
     * Returns the peer protocol's security; {@code withPeers}: for a member that has peers, whose TLS
     * certificate must then carry names for peers to allow it by (a member alone, or one that does
     * not know yet, needs none).
     */
    private PeerSecurity security(boolean withPeers) {
      PeerSecurity security;
      if (peerTls != null) {
        security =
            withPeers
                ? PeerSecurity.mutualTls(peerTls, peerAllowedIdentities)
                : PeerSecurity.mutualTlsBeforePeers(peerTls, peerAllowedIdentities);
      } else {
        security =
            peerSecret != null ? PeerSecurity.sharedSecret(peerSecret) : PeerSecurity.insecure();
      }
      if (peerTlsServerName != null) {
        security = security.withServerName(peerTlsServerName);
      }
      return peerTls != null && peerSecret != null ? security.withSecret(peerSecret) : security;
    }

    /**
     * Creates and starts the member: binds its servers and joins the cluster.
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
  }
}
