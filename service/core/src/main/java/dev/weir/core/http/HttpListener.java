package dev.weir.core.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The node's HTTP listener: a JDK {@link HttpServer} serving an {@link HttpRouter} on a thread
 * pool.
 *
 * <p>It counts exchanges in flight itself so that {@link #stop(Duration)} returns as soon as they
 * are done (the JDK 17 server's own {@code stop(delay)} always waits the full delay).
 */
public final class HttpListener implements AutoCloseable {

  /** gRPC {@code UNAVAILABLE}, the code of requests refused while stopping. */
  private static final int UNAVAILABLE = 14;

  private final HttpServer server;
  private final ExecutorService executor;
  private final AtomicInteger inFlight = new AtomicInteger();
  private final AtomicBoolean stopping = new AtomicBoolean();

  private HttpListener(HttpServer server, ExecutorService executor) {
    this.server = server;
    this.executor = executor;
  }

  /** Binds {@code address} (port 0 = any free port) and starts serving {@code routes}. */
  public static HttpListener start(InetSocketAddress address, List<HttpRoute> routes)
      throws IOException {
    return start(address, routes, null);
  }

  /**
   * Binds {@code address} and starts serving {@code routes} over HTTPS configured by {@code https},
   * or plain HTTP when it is null.
   */
  public static HttpListener start(
      InetSocketAddress address, List<HttpRoute> routes, HttpsConfigurator https)
      throws IOException {
    HttpServer server;
    if (https == null) {
      server = HttpServer.create(address, 0);
    } else {
      HttpsServer secure = HttpsServer.create(address, 0);
      secure.setHttpsConfigurator(https);
      server = secure;
    }
    int threads = Math.max(8, 4 * Runtime.getRuntime().availableProcessors());
    AtomicInteger count = new AtomicInteger();
    ExecutorService executor =
        new ThreadPoolExecutor(
            threads,
            threads,
            60,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            runnable -> {
              Thread thread = new Thread(runnable, "weir-http-" + count.incrementAndGet());
              thread.setDaemon(true);
              return thread;
            });
    server.setExecutor(executor);
    HttpListener listener = new HttpListener(server, executor);
    HttpRouter router = new HttpRouter(routes);
    server.createContext("/", exchange -> listener.handle(router, exchange));
    server.start();
    return listener;
  }

  private void handle(HttpRouter router, HttpExchange exchange) throws IOException {
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
   * closes the listening socket and every connection.
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
    executor.shutdown();
  }

  /** Stops with one second of grace, see {@link #stop(Duration)}. */
  @Override
  public void close() {
    stop(Duration.ofSeconds(1));
  }
}
