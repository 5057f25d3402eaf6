package dev.weir.core.cluster.peer;

import dev.weir.core.cluster.peer.auth.PeerSecurity;
import dev.weir.core.grpc.LateBoundService;
import dev.weir.core.grpc.MalformedRequests;
import dev.weir.core.grpc.Offloaded;
import dev.weir.core.grpc.StreamResets;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.proto.gubernator.PeersV1Grpc;
import io.grpc.BindableService;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The gRPC listener of the peer protocol, apart from the client-facing one: it serves {@code
 * PeersV1} alone, behind the {@link PeerSecurity}'s check. Forwarded decisions and GLOBAL updates
 * ({@link #ON_TRANSPORT}) never block and run on the transport's threads, as the client port's
 * decisions do, so a batch costs no thread hand-over at either end; every other call (a
 * membership notice waits for its hand-off, so those handlers may block) runs on a pool of its own
 * of {@value #THREADS} threads, and calls beyond the pool queue. An authenticated call whose
 * message cannot be parsed is answered {@code INVALID_ARGUMENT} ({@link MalformedRequests}).
 */
public final class PeerListener implements AutoCloseable {

  /** The most threads that run peer calls at once. */
  public static final int THREADS = 16;

  /** The methods whose handlers never block, run on the transport's threads. */
  public static final Set<String> ON_TRANSPORT =
      Set.of(
          PeersV1Grpc.getGetPeerRateLimitsMethod().getFullMethodName(),
          PeersV1Grpc.getForwardBatchesMethod().getFullMethodName(),
          PeersV1Grpc.getUpdatePeerGlobalsMethod().getFullMethodName());

  private static final long IDLE_SECONDS = 60;


  private final Server server;
  private final ExecutorService executor;
  private final LateBoundService peers;

  private PeerListener(Server server, ExecutorService executor, LateBoundService peers) {
    this.server = server;
    this.executor = executor;
    this.peers = peers;
  }

  /**
   * Binds {@code address} and serves {@code peers} with {@code security} (TLS, and the check of
   * every call, whose refusals count in {@code metrics}); {@code extra} interceptors run after the
   * check (tests count calls with them).
   *
   * @throws StartFailure when the address cannot be bound or the TLS context cannot be built
   */
  public static PeerListener start(
      InetSocketAddress address,
      BindableService peers,
      PeerSecurity security,
      WeirMetrics metrics,
      int maxMessageBytes,
      ServerInterceptor... extra)
      throws IOException {
    PeerListener listener = bind(address, security, metrics, maxMessageBytes, extra);
    listener.serve(peers);
    return listener;
  }

  /**
   * Binds {@code address} (port 0: a free port, read back with {@link #port()}) with {@code
   * security}, answering {@code UNAVAILABLE} until {@link #serve} names the service, so that a
   * member knows its peer port before it is built.
   *
   * @throws StartFailure when the address cannot be bound or the TLS context cannot be built
   */
  public static PeerListener bind(
      InetSocketAddress address,
      PeerSecurity security,
      WeirMetrics metrics,
      int maxMessageBytes,
      ServerInterceptor... extra)
      throws IOException {
    ExecutorService executor = executor();
    LateBoundService peers = LateBoundService.of(PeerMethods.SERVICE);
    try {
      NettyServerBuilder builder =
          NettyServerBuilder.forAddress(address)
              .withOption(ChannelOption.SO_REUSEADDR, true)
              .directExecutor()
              .maxInboundMessageSize(maxMessageBytes)
              .maxRstFramesPerWindow(StreamResets.MAX_PER_WINDOW, StreamResets.WINDOW_SECONDS)
              .addService(
                  intercepted(
                      Offloaded.service(peers.definition(), ON_TRANSPORT, executor),
                      security,
                      metrics,
                      extra));
      security.applyTo(builder);
      return new PeerListener(builder.build().start(), executor, peers);
    } catch (IOException e) {
      executor.shutdownNow();
      throw new StartFailure(address, e);
    } catch (RuntimeException e) {
      executor.shutdownNow();
      throw e;
    }
  }

  /** Serves {@code peers} (a {@code PeersV1} implementation) from now on. */
  public void serve(BindableService peers) {
    this.peers.bind(peers);
  }

  /** The peer listener could not start (its address is taken, its TLS context cannot be built). */
  public static final class StartFailure extends IOException {
    private static final long serialVersionUID = 1L;

    StartFailure(InetSocketAddress address, IOException cause) {
      super("cannot start the peer listener at " + address + ": " + cause.getMessage(), cause);
    }
  }

  private static ServerServiceDefinition intercepted(
      ServerServiceDefinition peers,
      PeerSecurity security,
      WeirMetrics metrics,
      ServerInterceptor[] extra) {
    List<ServerInterceptor> chain = new ArrayList<>(List.of(extra));
    ServerInterceptor check = security.serverCheck(metrics);
    if (check != null) {
      chain.add(check);
    }
    return MalformedRequests.guard(ServerInterceptors.intercept(peers, chain));
  }

  private static ExecutorService executor() {
    AtomicInteger count = new AtomicInteger();
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            THREADS,
            THREADS,
            IDLE_SECONDS,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            runnable -> {
              Thread thread = new Thread(runnable, "weir-peer-" + count.incrementAndGet());
              thread.setDaemon(true);
              return thread;
            });
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }

  /** Returns the port the listener is bound to. */
  public int port() {
    return server.getPort();
  }

  /** Returns the underlying server. */
  public Server server() {
    return server;
  }

  /** Blocks until the listener has terminated. */
  public void awaitTermination() throws InterruptedException {
    server.awaitTermination();
  }

  /**
   * Stops taking calls and waits up to {@code grace} for those in flight before cancelling them; an
   * interrupt cancels them at once and keeps the interrupt status. Then stops the pool.
   */
  public void stop(Duration grace) {
    server.shutdown();
    try {
      if (!server.awaitTermination(grace.toNanos(), TimeUnit.NANOSECONDS)) {
        server.shutdownNow();
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    } finally {
      executor.shutdown();
    }
  }

  /** Stops at once, cancelling the calls in flight. */
  @Override
  public void close() {
    server.shutdownNow();
    executor.shutdown();
  }
}
