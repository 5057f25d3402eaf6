package dev.weir.core.http;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** The node's HTTP listener: a JDK {@link HttpServer} serving an {@link HttpRouter} on a thread pool. */
public final class HttpListener implements AutoCloseable {

  private final HttpServer server;
  private final ExecutorService executor;

  private HttpListener(HttpServer server, ExecutorService executor) {
    this.server = server;
    this.executor = executor;
  }

  /** Binds {@code address} (port 0 = any free port) and starts serving {@code routes}. */
  public static HttpListener start(InetSocketAddress address, List<HttpRoute> routes)
      throws IOException {
    HttpServer server = HttpServer.create(address, 0);
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
    server.createContext("/", new HttpRouter(routes));
    server.start();
    return new HttpListener(server, executor);
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
   * Stops accepting, lets exchanges in progress finish for up to {@code graceSeconds} (open keep-alive
   * connections also hold it that long), then closes every connection.
   */
  public void stop(int graceSeconds) {
    server.stop(graceSeconds);
    executor.shutdown();
  }

  /** Stops with one second of grace, see {@link #stop(int)}. */
  @Override
  public void close() {
    stop(1);
  }
}
