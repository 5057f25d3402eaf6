package dev.weir.core.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.metrics.WeirMetrics;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The node's HTTP listener: a JDK {@link HttpServer} serving an {@link HttpRouter} on a bounded
 * pool of workers ({@link HttpSettings}). A request that finds every worker busy and the queue full
 * is answered 503 ({@code UNAVAILABLE}) at once by a small separate pool instead of waiting without
 * bound, unless its route is {@linkplain HttpRoute#servedWhenSaturated() served when saturated}
 * (the probes), which that pool then serves. When that pool is full as well the connection is
 * closed without an answer. Every refused request is counted once as {@link
 * RefusalReason#HTTP_SATURATED}.
 *
 * <p>It counts exchanges in flight itself so that {@link #stop(Duration)} returns as soon as they
 * are done (the JDK 17 server's own {@code stop(delay)} always waits the full delay).
 */
public final class HttpListener implements AutoCloseable {

  /** gRPC {@code UNAVAILABLE}, the code of requests refused while stopping or saturated. */
  private static final int UNAVAILABLE = 14;

  private final HttpServer server;
  private final HttpWorkers workers;
  private final WeirMetrics metrics;
  private final String saturatedMessage;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final AtomicBoolean stopping = new AtomicBoolean();

  private HttpListener(
      HttpServer server, HttpWorkers workers, WeirMetrics metrics, String saturatedMessage) {
    this.server = server;
    this.workers = workers;
    this.metrics = metrics;
    this.saturatedMessage = saturatedMessage;
  }

  /** Binds {@code address} (port 0 = any free port) and starts serving {@code routes}. */
  public static HttpListener start(InetSocketAddress address, List<HttpRoute> routes)
      throws IOException {
    return start(address, routes, null);
  }

  /**
   * Binds {@code address} and starts serving {@code routes} over HTTPS configured by {@code https},
   * or plain HTTP when it is null, with the default capacity and no metrics.
   */
  public static HttpListener start(
      InetSocketAddress address, List<HttpRoute> routes, HttpsConfigurator https)
      throws IOException {
    return start(address, routes, https, HttpSettings.defaults(), WeirMetrics.NOOP);
  }

  /**
   * Binds {@code address} and starts serving {@code routes} (over HTTPS when {@code https} is not
   * null) on {@code settings.threads()} workers; a request that finds them all busy and {@code
   * settings.maxQueue()} requests waiting is answered 503 at once and counted in {@code metrics} as
   * {@link RefusalReason#HTTP_SATURATED}.
   */
  public static HttpListener start(
      InetSocketAddress address,
      List<HttpRoute> routes,
      HttpsConfigurator https,
      HttpSettings settings,
      WeirMetrics metrics)
      throws IOException {
    return start(
        address,
        routes,
        https,
        settings,
        metrics,
        HttpWorkers.REFUSAL_THREADS,
        HttpWorkers.REFUSAL_QUEUE);
  }

  /** Like the public {@code start} with a refusal pool of the given size. */
  static HttpListener start(
      InetSocketAddress address,
      List<HttpRoute> routes,
      HttpsConfigurator https,
      HttpSettings settings,
      WeirMetrics metrics,
      int refusalThreads,
      int refusalQueue)
      throws IOException {
    HttpServer server;
    if (https == null) {
      server = HttpServer.create(address, 0);
    } else {
      HttpsServer secure = HttpsServer.create(address, 0);
      secure.setHttpsConfigurator(https);
      server = secure;
    }
    HttpWorkers workers =
        new HttpWorkers(
            settings,
            refusalThreads,
            refusalQueue,
            () -> metrics.refused(RefusalReason.HTTP_SATURATED));
    server.setExecutor(workers);
    HttpListener listener =
        new HttpListener(server, workers, metrics, saturatedMessage(settings));
    metrics.watchHttpQueue(workers::queued);
    HttpRouter router = new HttpRouter(routes);
    server.createContext("/", exchange -> listener.handle(router, exchange));
    server.start();
    return listener;
  }

  /** Returns the message of a request refused because the workers are saturated. */
  static String saturatedMessage(HttpSettings settings) {
    return "HTTP listener saturated: all "
        + settings.threads()
        + " worker threads are busy and "
        + settings.maxQueue()
        + " requests are waiting (the most allowed); retry later, or raise "
        + HttpSettings.MAX_QUEUE.name()
        + " or "
        + HttpSettings.THREADS.name();
  }

  private void handle(HttpRouter router, HttpExchange exchange) throws IOException {
    if (HttpWorkers.isOverflow() && !router.servedWhenSaturated(exchange)) {
      metrics.refused(RefusalReason.HTTP_SATURATED);
      exchange.getResponseHeaders().set("Connection", "close");
      HttpResponses.sendError(exchange, 503, UNAVAILABLE, saturatedMessage);
      return;
    }
    inFlight.incrementAndGet();
    try {
      if (stopping.get()) {
        exchange.getResponseHeaders().set("Connection", "close");
        HttpResponses.sendError(exchange, 503, UNAVAILABLE, "server is shutting down");
        return;
      }
      router.handle(exchange);
    } finally {
      inFlight.decrementAndGet();
    }
  }

  /** Returns the number of requests waiting for a worker. */
  int queued() {
    return workers.queued();
  }

  /** Returns the number of requests being answered while the workers are saturated. */
  int overflowRunning() {
    return workers.overflowRunning();
  }

  /** Returns the number of requests waiting to be answered while the workers are saturated. */
  int overflowQueued() {
    return workers.overflowQueued();
  }

  /** Returns the bound port. */
  public int port() {
    return server.getAddress().getPort();
  }

  /** Returns the bound address. */
  public InetSocketAddress address() {
    return server.getAddress();
  }

  /**
   * Refuses new requests with 503, waits up to {@code grace} for the exchanges in flight, then
   * closes the listening socket and every connection and ends the threads. An interrupt cuts the
   * wait short (the interrupt status is kept).
   */
  public void stop(Duration grace) {
    stopping.set(true);
    long deadline = System.nanoTime() + grace.toNanos();
    while (inFlight.get() > 0 && System.nanoTime() < deadline) {
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    server.stop(0);
    workers.shutdown();
  }

  /** Stops with one second of grace, see {@link #stop(Duration)}. */
  @Override
  public void close() {
    stop(Duration.ofSeconds(1));
  }
}
