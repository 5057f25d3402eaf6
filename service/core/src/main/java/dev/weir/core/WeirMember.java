package dev.weir.core;

import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.cluster.peer.PeerListener;
import dev.weir.core.cluster.peer.PeersService;
import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.config.HostPort;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.health.HealthStatus;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import dev.weir.core.time.ExecutorScheduler;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * A full member of a Weir cluster running inside this JVM, a {@link ClusterNode} with its servers
 * and discovery: it owns a share of the buckets, forwards
 * the rest to their owners in batches and serves {@code PeersV1} to the other members on its peer
 * listener, a gRPC server of its own with its own threads, which only members get through (see
 * {@link PeerSecurity}). A member that cannot have peers (a fixed list of itself) opens no peer
 * listener. Made by {@link Weir#builder()}.
 *
 * <p>Life cycle: {@link Weir.Builder#build()} creates the member (binding only a peer listener at
 * port 0, to learn its port), so that {@link #service()} can be handed to other gRPC services
 * before they are added to the server builder; {@link #start()} builds and starts the given server
 * and the peer listener and joins the cluster; {@link #close()} leaves it, handing buckets over,
 * and stops both.
 */
public final class WeirMember implements RateLimiter {

  private static final Logger LOG = LoggerFactory.getLogger(WeirMember.class);
  private static final long SERVER_GRACE_SECONDS = 5;

  private enum State {
    CREATED,
    STARTED,
    LEFT,
    CLOSED
  }

  private final ClusterNode cluster;
  private final ExecutorScheduler scheduler;
  private final PeerDiscovery discovery;
  private final ServerBuilder<?> serverBuilder;
  private final PeerSecurity security;
  private final WeirMetrics metrics;
  private final InputLimits limits;
  private final Clock clock;
  private final HostPort advertiseAddress;
  private final Duration leaveWait;
  private final Level lifecycleLevel;
  private Server server;
  private PeerListener peerListener;
  private volatile State state = State.CREATED;

  WeirMember(
      ClusterNode cluster,
      ExecutorScheduler scheduler,
      PeerDiscovery discovery,
      ServerBuilder<?> serverBuilder,
      Server server,
      PeerListener peerListener,
      PeerSecurity security,
      WeirMetrics metrics,
      InputLimits limits,
      Clock clock,
      HostPort advertiseAddress,
      Duration leaveWait,
      Level lifecycleLevel) {
    this.cluster = cluster;
    this.scheduler = scheduler;
    this.discovery = discovery;
    this.serverBuilder = serverBuilder;
    this.server = server;
    this.peerListener = peerListener;
    this.security = security;
    this.metrics = metrics;
    this.limits = limits;
    this.clock = clock;
    this.advertiseAddress = advertiseAddress;
    this.leaveWait = leaveWait;
    this.lifecycleLevel = lifecycleLevel;
  }

  /**
   * Starts the member: builds and starts the server of the given server builder (a given started
   * server already serves), lets the peer listener {@link Weir.Builder#build()} bound (when the
   * member may have peers) serve {@code PeersV1}, and joins the cluster through the discovery.
   * Returns this member.
   *
   * @throws IOException when a server cannot bind or the discovery cannot start
   * @throws IllegalStateException when the member was already started
   */
  public synchronized WeirMember start() throws IOException {
    if (state != State.CREATED) {
      throw new IllegalStateException("the member is " + state.name().toLowerCase() + ", not new");
    }
    try {
      // Before any server serves: a call answered earlier would decide on a fresh bucket.
      cluster.restoreSnapshots();
      if (peerListener != null) {
        peerListener.serve(
            new PeersService(
                cluster, new PeerInputValidator(limits, cluster.self()), clock, metrics));
      }
      if (serverBuilder != null) {
        server = serverBuilder.build().start();
      }
    } catch (IOException | RuntimeException e) {
      stopServers();
      failed();
      throw e;
    }
    try {
      cluster.join(discovery);
    } catch (Exception e) {
      stopServers();
      failed();
      throw new IOException("cannot join the cluster: " + e.getMessage(), e);
    }
    state = State.STARTED;
    LOG.atLevel(lifecycleLevel)
        .log(
            "Weir member {} started; peer listener: {}",
            advertiseAddress,
            peerListener == null
                ? "none (no peers)"
                : "port " + peerListener.port() + ", security " + security.describe());
    return this;
  }

  private void stopServers() {
    if (server != null) {
      server.shutdownNow();
    }
    if (peerListener != null) {
      peerListener.close();
    }
  }

  @Override
  public CompletableFuture<RateLimitResponse> decide(RateLimitRequest request) {
    return decideAll(List.of(request)).thenApply(responses -> responses.get(0));
  }

  /**
   * {@inheritDoc}
   *
   * <p>Lists longer than {@link RateLimitService#MAX_BATCH_SIZE} are checked in slices of that
   * size. After {@link #leave()} the checks go to the next owners, as {@link #service()}'s do.
   * Before {@link #start()} and after {@link #close()} the future fails with {@link
   * IllegalStateException}.
   */
  @Override
  public CompletableFuture<List<RateLimitResponse>> decideAll(List<RateLimitRequest> requests) {
    State now = state;
    if (now == State.CREATED) {
      return CompletableFuture.failedFuture(
          new IllegalStateException("the member has not started; call start() before checking"));
    }
    if (now == State.CLOSED) {
      return CompletableFuture.failedFuture(
          new IllegalStateException("the member is closed; it decides nothing after close()"));
    }
    return RateLimitService.decideInSlices(cluster.service(), requests);
  }

  @Override
  public HealthStatus health() {
    return cluster.nodeHealth().health();
  }

  /**
   * Returns the request path the other front doors of this member call (for example {@code
   * pb.gubernator.V1} or Envoy's {@code RateLimitService}); usable before {@link #start()}.
   */
  public RateLimitService service() {
    return cluster.service();
  }

  /** Returns the address this member is known by in the cluster (its advertised gRPC address). */
  public HostPort advertiseAddress() {
    return advertiseAddress;
  }

  /**
   * Returns the port of the gRPC server the member started: the one built from the given server
   * builder, else its peer listener (the member's own server).
   *
   * @throws IllegalStateException before {@link #start()}, or when the member serves nothing (no
   *     server builder and no peers)
   */
  public int grpcPort() {
    if (server != null) {
      return server.getPort();
    }
    if (peerListener != null) {
      return peerListener.port();
    }
    throw new IllegalStateException(
        state == State.CREATED
            ? "the member has not started"
            : "the member serves no gRPC port: it has no server builder and no peers");
  }

  /** Returns the port of the peer listener, empty when the member has no peers. */
  public OptionalInt peerPort() {
    PeerListener listener = peerListener;
    return listener == null ? OptionalInt.empty() : OptionalInt.of(listener.port());
  }

  /** Returns the cluster member inside (its ring, peer clients and hand-off counters). */
  public ClusterNode cluster() {
    return cluster;
  }

  /** Blocks until the gRPC server (else the peer listener) has terminated. */
  public void awaitTermination() throws InterruptedException {
    if (server != null) {
      server.awaitTermination();
    } else if (peerListener != null) {
      peerListener.awaitTermination();
    }
  }

  /**
   * Leaves the cluster but keeps the servers and the peer clients up: sends queued GLOBAL hits,
   * tells the other members this one is leaving and hands every bucket to its next owner, waiting
   * up to the leave wait for each step; calls still arriving, and this member's own {@link
   * #decide} calls, are forwarded to the next owners. For composition roots that stop other
   * listeners before {@link #close()}; calling it again, or {@code close()} after it, does not
   * leave twice.
   */
  public synchronized void leave() {
    if (state != State.STARTED) {
      return;
    }
    state = State.LEFT;
    cluster.leave(leaveWait);
    LOG.atLevel(lifecycleLevel)
        .log(
            "Weir member {} left the cluster: handed {} buckets to their next owners",
            advertiseAddress,
            cluster.handOff().sentCount());
  }

  /**
   * Leaves the cluster (see {@link #leave()}), stops the servers (up to 5 s for calls in flight),
   * the peer clients, the timers and the discovery. Later checks fail with {@link
   * IllegalStateException}. Calling it again does nothing.
   */
  @Override
  public void close() {
    close(Duration.ofSeconds(SERVER_GRACE_SECONDS));
  }

  /**
   * Closes the member as {@link #close()} does, waiting up to {@code serverGrace} for the gRPC
   * calls in flight before cancelling them (a grace too long to count in nanoseconds, about 292
   * years, waits as long as that), then closing the peer clients. After {@link #stopServer} it only
   * releases the peer clients, the timers and the discovery. A step that throws does not keep the
   * later ones from running; the first exception is rethrown once all have run.
   */
  public synchronized void close(Duration serverGrace) {
    Objects.requireNonNull(serverGrace, "serverGrace");
    if (state == State.CLOSED) {
      return;
    }
    RuntimeException failure = null;
    failure = attempt(failure, this::leave);
    state = State.CLOSED;
    failure = attempt(failure, () -> stopServer(serverGrace));
    failure = attempt(failure, cluster::close);
    failure = attempt(failure, scheduler::close);
    failure = attempt(failure, this::closeDiscovery);
    if (failure != null) {
      throw failure;
    }
  }

  /**
   * Runs {@code step} and returns {@code failure}, or the exception {@code step} threw when there
   * was none yet (else that exception is added to {@code failure} as suppressed).
   */
  private static RuntimeException attempt(RuntimeException failure, Runnable step) {
    try {
      step.run();
    } catch (RuntimeException e) {
      if (failure == null) {
        return e;
      }
      failure.addSuppressed(e);
    }
    return failure;
  }

  /**
   * Stops the servers alone (the given one and the peer listener, side by side), waiting up to
   * {@code grace} for the calls in flight before cancelling them; the timers and the discovery keep
   * running, so checks that other listeners still answer through {@link #service()} (GLOBAL ones
   * schedule their broadcasts) keep working until {@link #close(Duration)}. For composition roots
   * that stop all their listeners side by side after {@link #leave()}; an interrupt cancels the
   * calls at once and keeps the interrupt status. Does nothing before {@link #start()} (the peer
   * listener {@link Weir.Builder#build()} bound and a given {@link Weir.Builder#server} keep
   * running, for {@code start()} to serve on) or once the servers have stopped. A grace too long
   * to count in nanoseconds (about 292 years) waits as long as that.
   */
  public void stopServer(Duration grace) {
    long graceNanos = saturatedNanos(Objects.requireNonNull(grace, "grace"));
    Server started;
    PeerListener listener;
    synchronized (this) {
      if (state == State.CREATED) {
        return;
      }
      started = server;
      listener = peerListener;
    }
    long begun = System.nanoTime();
    if (listener != null) {
      listener.server().shutdown();
    }
    try {
      if (started != null) {
        stopGracefully(started, graceNanos);
      }
    } finally {
      if (listener != null) {
        listener.stop(Duration.ofNanos(Math.max(0, graceNanos - (System.nanoTime() - begun))));
      }
    }
  }

  /** Returns {@code grace} in nanoseconds, {@link Long#MAX_VALUE} when it has more. */
  private static long saturatedNanos(Duration grace) {
    try {
      return grace.toNanos();
    } catch (ArithmeticException tooLong) {
      return grace.isNegative() ? 0 : Long.MAX_VALUE;
    }
  }

  private static void stopGracefully(Server server, long graceNanos) {
    server.shutdown();
    try {
      if (!server.awaitTermination(graceNanos, TimeUnit.NANOSECONDS)) {
        server.shutdownNow();
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  // Closes the cluster node too, which writes back the snapshot it may have restored already.
  private void failed() {
    state = State.CLOSED;
    cluster.close();
    scheduler.close();
    closeDiscovery();
  }

  private void closeDiscovery() {
    try {
      discovery.close();
    } catch (Exception e) {
      LOG.warn("discovery did not close cleanly: {}", e.toString());
    }
  }
}
