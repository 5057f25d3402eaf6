package dev.weir.http;

import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import javax.net.ssl.SSLEngine;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An HTTP/1.1 listener serving {@link HttpRoute}s on Netty's HTTP codec, with keep-alive and the
 * limits of its {@link HttpSettings}: a few I/O threads run the routes, whose handlers never block
 * (an answer is written when its stage completes); a request beyond the most allowed in flight is
 * answered 503 ({@code UNAVAILABLE}) at once unless its route is a {@linkplain
 * HttpRoute#servedWhenSaturated() probe}; a connection beyond the most allowed makes room by
 * closing the one that has waited longest for a request, or is answered 503 and closed when all are
 * being answered; a request head, body or idle connection that takes too long is cut off ({@link
 * RequestDeadlines}), and so is an answer the client does not read in time ({@link
 * AnswerDeadline}); a body over the limit is answered 413 ({@code RESOURCE_EXHAUSTED}); framing the
 * decoder cannot read is answered 400. Every refusal is counted in its {@link WeirMetrics}.
 *
 * <p>Netty stays inside this package: routes see only {@link HttpCall} and {@link HttpAnswer}, and
 * TLS comes in as a supplier of JDK {@link SSLEngine}s, one per connection, so that a reloaded
 * certificate is used by the next connection.
 */
public final class HttpListener implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(HttpListener.class);
  private static final RateLimitedLogger METER_WARNINGS = RateLimitedLogger.of(HttpListener.class);

  /** gRPC {@code UNAVAILABLE}. */
  private static final int UNAVAILABLE = 14;

  /** gRPC {@code RESOURCE_EXHAUSTED}. */
  private static final int RESOURCE_EXHAUSTED = 8;

  /**
   * The most time {@link #stop} waits for the accepting thread to end, which is when the listening
   * socket is really closed (the JDK closes a channel registered with a selector only once it is
   * deregistered).
   */
  private static final long ACCEPTOR_STOP_MILLIS = 5000;

  /** The longest request line read, in bytes; longer is answered 414. */
  static final int MAX_INITIAL_LINE_BYTES = 8192;

  /** The most bytes of header fields read; more is answered 431. */
  static final int MAX_HEADER_BYTES = 16384;

  private final Channel server;
  private final InetSocketAddress address;
  private final EventLoopGroup acceptor;
  private final EventLoopGroup workers;
  private final ChannelGroup connections;
  private final InFlight inFlight;
  private final AtomicInteger open;
  private final AtomicBoolean stopped = new AtomicBoolean();

  private HttpListener(
      Channel server,
      EventLoopGroup acceptor,
      EventLoopGroup workers,
      ChannelGroup connections,
      InFlight inFlight,
      AtomicInteger open) {
    this.server = server;
    this.address = (InetSocketAddress) server.localAddress();
    this.acceptor = acceptor;
    this.workers = workers;
    this.connections = connections;
    this.inFlight = inFlight;
    this.open = open;
  }

  /** Returns a builder of a listener bound to {@code address} (port 0 = any free port). */
  public static Builder builder(InetSocketAddress address) {
    return new Builder(address);
  }

  /** A builder of an {@link HttpListener}; everything but the address has a default. */
  public static final class Builder {
    private final InetSocketAddress address;
    private List<HttpRoute> routes = List.of();
    private HttpSettings settings = HttpSettings.defaults();
    private Supplier<SSLEngine> tls;
    private WeirMetrics metrics = WeirMetrics.NOOP;
    private Clock clock = SystemClock.INSTANCE;
    private String name = "http";

    private Builder(InetSocketAddress address) {
      this.address = Objects.requireNonNull(address, "address");
    }

    /** Sets the routes served (default none: every path is 404). */
    public Builder routes(List<HttpRoute> value) {
      this.routes = List.copyOf(value);
      return this;
    }

    /** Sets the threads, limits and timeouts (default {@link HttpSettings#defaults()}). */
    public Builder settings(HttpSettings value) {
      this.settings = Objects.requireNonNull(value, "settings");
      return this;
    }

    /**
     * Serves HTTPS, each connection on a new server-mode engine from {@code engines} (default plain
     * HTTP).
     */
    public Builder tls(Supplier<SSLEngine> engines) {
      this.tls = Objects.requireNonNull(engines, "engines");
      return this;
    }

    /**
     * Records requests by route and status, refusals and the gauges of requests in flight and
     * connections open in {@code value} (default none), timing requests with {@code timer}.
     */
    public Builder metrics(WeirMetrics value, Clock timer) {
      this.metrics = Objects.requireNonNull(value, "metrics");
      this.clock = Objects.requireNonNull(timer, "timer");
      return this;
    }

    /** Sets the name of the listener's threads, {@code weir-NAME-*} (default {@code http}). */
    public Builder threadName(String value) {
      this.name = Objects.requireNonNull(value, "name");
      return this;
    }

    /**
     * Binds the address and starts serving.
     *
     * @throws java.net.BindException when the address is taken
     * @throws IOException when it cannot be bound otherwise
     */
    public HttpListener start() throws IOException {
      return HttpListener.bind(this);
    }
  }

  private static HttpListener bind(Builder b) throws IOException {
    HttpSettings settings = b.settings;
    WeirMetrics metrics = b.metrics;
    RouteTable routes = new RouteTable(b.routes);
    InFlight inFlight = new InFlight(settings.maxInFlight());
    AtomicInteger open = new AtomicInteger();
    WaitingConnections waiting = new WaitingConnections();
    HttpAnswer saturated = HttpAnswer.error(503, UNAVAILABLE, saturatedMessage(settings));
    HttpAnswer tooManyConnections =
        HttpAnswer.error(503, UNAVAILABLE, tooManyConnectionsMessage(settings));
    HttpAnswer tooLarge =
        HttpAnswer.error(
            413,
            RESOURCE_EXHAUSTED,
            "request body is larger than the "
                + settings.maxBodyBytes()
                + " bytes allowed (WEIR_HTTP_MAX_BODY_SIZE)");
    UnfinishedBodies unfinished =
        new UnfinishedBodies(UnfinishedBodies.budgetFor(settings.maxBodyBytes()));
    HttpAnswer overBudget =
        HttpAnswer.error(
            503,
            UNAVAILABLE,
            "HTTP listener holds "
                + unfinished.budget()
                + " bytes of request bodies not yet complete (the most allowed: "
                + UnfinishedBodies.LARGEST_BODIES
                + " x WEIR_HTTP_MAX_BODY_SIZE); send the body at once, or retry later");
    Runnable countOverBudget = counting(metrics, RefusalReason.HTTP_SATURATED);
    EventLoopGroup acceptor =
        new MultiThreadIoEventLoopGroup(
            1,
            new DefaultThreadFactory("weir-" + b.name + "-accept", true),
            NioIoHandler.newFactory());
    EventLoopGroup workers =
        new MultiThreadIoEventLoopGroup(
            settings.threads(),
            new DefaultThreadFactory("weir-" + b.name, true),
            NioIoHandler.newFactory());
    ChannelGroup connections = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    Supplier<SSLEngine> tls = b.tls;
    ServerBootstrap bootstrap =
        new ServerBootstrap()
            .group(acceptor, workers)
            .channel(NioServerSocketChannel.class)
            .childOption(ChannelOption.TCP_NODELAY, true)
            .childHandler(
                new ChannelInitializer<SocketChannel>() {
                  @Override
                  protected void initChannel(SocketChannel channel) {
                    connections.add(channel);
                    Runnable onTimeout = counting(metrics, RefusalReason.HTTP_TIMEOUT);
                    RequestDeadlines deadlines =
                        new RequestDeadlines(
                            settings, onTimeout, head -> countLate(head, routes, metrics), waiting);
                    ChannelPipeline pipeline = channel.pipeline();
                    pipeline.addLast(
                        new ConnectionLimit(
                            open,
                            settings.maxConnections(),
                            waiting,
                            tls == null,
                            tooManyConnections,
                            counting(metrics, RefusalReason.HTTP_TOO_MANY_CONNECTIONS)));
                    pipeline.addLast(deadlines.raw());
                    if (tls != null) {
                      pipeline.addLast(new SslHandler(tls.get()));
                    }
                    pipeline.addLast(
                        new HttpServerCodec(
                            new HttpDecoderConfig()
                                .setMaxInitialLineLength(MAX_INITIAL_LINE_BYTES)
                                .setMaxHeaderSize(MAX_HEADER_BYTES)
                                .setMaxChunkSize(8192)
                                .setHeadersFactory(deadlines.heads())));
                    pipeline.addLast(new AnswerDeadline(settings.writeTimeout(), onTimeout));
                    pipeline.addLast(deadlines.decoded());
                    pipeline.addLast(AnsweringReads.INSTANCE);
                    pipeline.addLast(
                        new BodyLimit(
                            settings.maxBodyBytes(),
                            request -> refuseTooLarge(request, routes, metrics, tooLarge),
                            unfinished,
                            () -> {
                              countOverBudget.run();
                              return overBudget;
                            }));
                    pipeline.addLast(
                        new RouteDispatcher(
                            routes, inFlight, deadlines, metrics, b.clock, saturated));
                  }
                });
    ChannelFuture bound = bootstrap.bind(b.address).awaitUninterruptibly();
    if (!bound.isSuccess()) {
      acceptor.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      workers.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      Throwable cause = bound.cause();
      if (cause instanceof IOException io) {
        throw io;
      }
      throw new IOException("cannot bind " + b.address + ": " + cause, cause);
    }
    metrics.watchHttpInFlight(inFlight::count);
    metrics.watchHttpConnections(open::get);
    return new HttpListener(bound.channel(), acceptor, workers, connections, inFlight, open);
  }

  /**
   * Returns the count of one refusal for {@code reason} in {@code metrics}, run inside the
   * connection's handlers and timers, where a meter that throws would leave the connection open and
   * uncounted: its failure is logged instead.
   */
  private static Runnable counting(WeirMetrics metrics, RefusalReason reason) {
    return () -> {
      try {
        metrics.refused(reason);
      } catch (RuntimeException e) {
        METER_WARNINGS.warn("refused", "counting an HTTP refusal ({}) failed", reason, e);
      }
    };
  }

  /**
   * Counts a request answered 408 because its body came too late under its route, when the route
   * is known; a meter that throws is logged, as the answer runs inside the connection's timer.
   */
  private static void countLate(HttpRequest head, RouteTable routes, WeirMetrics metrics) {
    String path = RouteDispatcher.pathOf(head.uri());
    if (path == null || routes.find(head.method().name(), path) == null) {
      return;
    }
    try {
      metrics.httpRequest(path, RequestDeadlines.LATE_BODY_STATUS, 0);
    } catch (RuntimeException e) {
      METER_WARNINGS.warn("meter", "counting an HTTP answer of {} failed", path, e);
    }
  }

  private static HttpAnswer refuseTooLarge(
      HttpRequest request, RouteTable routes, WeirMetrics metrics, HttpAnswer tooLarge) {
    metrics.refused(RefusalReason.HTTP_BODY_TOO_LARGE);
    String path = RouteDispatcher.pathOf(request.uri());
    if (path != null && routes.find(request.method().name(), path) != null) {
      metrics.httpRequest(path, tooLarge.status(), 0);
    }
    return tooLarge;
  }

  /** Returns the message of a request refused because the listener is saturated. */
  static String saturatedMessage(HttpSettings settings) {
    return "HTTP listener saturated: "
        + settings.maxInFlight()
        + " requests are being answered (the most allowed); retry later, or raise "
        + HttpSettings.MAX_IN_FLIGHT.name();
  }

  /** Returns the message of a connection refused because the listener has too many. */
  static String tooManyConnectionsMessage(HttpSettings settings) {
    return "HTTP listener has "
        + settings.maxConnections()
        + " connections open, all being answered (the most allowed); retry later, or raise "
        + HttpSettings.MAX_CONNECTIONS.name();
  }

  /** Returns the number of requests being answered. */
  int inFlight() {
    return inFlight.count();
  }

  /** Returns the number of connections open and counted against the limit. */
  int connectionsOpen() {
    return open.get();
  }

  /** Returns the bound port. */
  public int port() {
    return address().getPort();
  }

  /** Returns the bound address. */
  public InetSocketAddress address() {
    return address;
  }

  /**
   * Stops: closes the listening socket at once (new connections are refused), answers further
   * requests on open connections 503 and closes connections between requests, waits up to {@code
   * grace} for the requests in flight to be answered, then closes every connection and ends the
   * threads. An interrupt cuts the wait short (the interrupt status is kept). Calling it again does
   * nothing.
   */
  public void stop(Duration grace) {
    if (!stopped.compareAndSet(false, true)) {
      return;
    }
    server.close().awaitUninterruptibly();
    acceptor
        .shutdownGracefully(0, 0, TimeUnit.SECONDS)
        .awaitUninterruptibly(ACCEPTOR_STOP_MILLIS, TimeUnit.MILLISECONDS);
    try {
      CompletableFuture<Void> drained = inFlight.drain();
      for (Channel connection : connections) {
        connection.pipeline().fireUserEventTriggered(RequestDeadlines.DRAIN);
      }
      drained.get(grace.toNanos(), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (TimeoutException | ExecutionException e) {
      LOG.info(
          "HTTP listener on port {} cuts {} requests still in flight after {} of grace",
          port(),
          inFlight.count(),
          grace);
    } finally {
      connections.close();
      workers.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    }
  }

  /** Stops with one second of grace, see {@link #stop(Duration)}. */
  @Override
  public void close() {
    stop(Duration.ofSeconds(1));
  }
}
