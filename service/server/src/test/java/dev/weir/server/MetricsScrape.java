package dev.weir.server;

import dev.weir.core.testkit.Await;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;

/** Reads a node's Prometheus text ({@code GET /metrics} over plain HTTP) in tests. */
final class MetricsScrape {

  private static final Duration LIMIT = Duration.ofSeconds(10);

  private MetricsScrape() {}

  /**
   * Scrapes {@code http://127.0.0.1:<port>/metrics} until {@code ready} holds (server-side
   * accounting may end after the client's call) or ten seconds pass; returns the last scrape.
   */
  static String until(HttpClient http, int port, Predicate<String> ready) throws Exception {
    AtomicReference<String> last = new AtomicReference<>(scrape(http, port));
    if (!ready.test(last.get())) {
      Await.holdsWithin(
          LIMIT,
          () -> {
            last.set(scrape(http, port));
            return ready.test(last.get());
          });
    }
    return last.get();
  }

  private static String scrape(HttpClient http, int port) {
    try {
      return http.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
              HttpResponse.BodyHandlers.ofString())
          .body();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while scraping /metrics", e);
    }
  }
}
