package dev.weir.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class HttpSaturationTest {

  private static final int MAX_IN_FLIGHT = 3;
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final HttpClient client =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final CompletableFuture<HttpAnswer> release = new CompletableFuture<>();
  private final AtomicInteger entered = new AtomicInteger();
  private final List<Socket> sockets = new ArrayList<>();
  private HttpListener listener;

  @AfterEach
  void stop() throws Exception {
    release.complete(HttpAnswer.json(200, "{}"));
    for (Socket socket : sockets) {
      socket.close();
    }
    if (listener != null) {
      listener.close();
    }
  }

  private void startBlocking(HttpSettings settings) throws Exception {
    listener =
        HttpListener.builder(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .routes(
                List.of(
                    HttpRoute.get(
                        "/block",
                        call -> {
                          entered.incrementAndGet();
                          return release;
                        }),
                    HttpRoute.get("/fast", call -> HttpAnswer.json(200, "{}").completed()),
                    HttpRoute.probe(
                        "/probe", call -> HttpAnswer.json(200, "{\"ok\":1}").completed())))
            .settings(settings)
            .metrics(new MicrometerMetrics(registry), new FakeClock())
            .start();
  }

  private static HttpSettings settings(int threads, int maxInFlight) {
    return HttpSettings.defaults().withThreads(threads).withMaxInFlight(maxInFlight);
  }

  /** Fills every in-flight place with requests that wait for {@link #release}. */
  private List<CompletableFuture<HttpResponse<String>>> saturate() throws Exception {
    List<CompletableFuture<HttpResponse<String>>> admitted = new ArrayList<>();
    for (int i = 0; i < MAX_IN_FLIGHT; i++) {
      admitted.add(send("/block"));
    }
    Await.until(WAIT, () -> entered.get() == MAX_IN_FLIGHT, "every place taken");
    return admitted;
  }

  private CompletableFuture<HttpResponse<String>> send(String path) {
    return client.sendAsync(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + listener.port() + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private double saturatedCount() {
    return registry
        .get(MicrometerMetrics.REQUESTS_REFUSED)
        .tag("reason", RefusalReason.HTTP_SATURATED.label())
        .counter()
        .count();
  }

  @Test
  void request_maxInFlightReached_503WithGatewayBodyThenAdmittedOnesComplete() throws Exception {
    startBlocking(settings(1, MAX_IN_FLIGHT));
    List<CompletableFuture<HttpResponse<String>>> admitted = saturate();

    HttpResponse<String> refused = send("/fast").get(10, TimeUnit.SECONDS);

    assertThat(refused.statusCode()).isEqualTo(503);
    assertThat(refused.headers().firstValue("content-type")).contains("application/json");
    assertThat(refused.headers().firstValue("connection")).contains("close");
    assertThat(refused.body())
        .isEqualTo(
            HttpAnswer.errorBody(
                14,
                "HTTP listener saturated: 3 requests are being answered (the most allowed);"
                    + " retry later, or raise WEIR_HTTP_MAX_IN_FLIGHT"));
    assertThat(saturatedCount()).isEqualTo(1.0);
    assertThat(admitted).allSatisfy(f -> assertThat(f).isNotDone());

    release.complete(HttpAnswer.json(200, "{}"));

    for (CompletableFuture<HttpResponse<String>> f : admitted) {
      assertThat(f.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
    assertThat(send("/fast").get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(saturatedCount()).isEqualTo(1.0);
  }

  @Test
  void request_refusedWhileSaturated_countedUnderItsRouteAnd503() throws Exception {
    startBlocking(settings(1, MAX_IN_FLIGHT));
    saturate();

    assertThat(send("/fast").get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(503);

    assertThat(
            registry
                .get(MicrometerMetrics.HTTP_REQUESTS)
                .tag("route", "/fast")
                .tag("status", "503")
                .timer()
                .count())
        .isEqualTo(1);
  }

  @Test
  void request_stalledClientsWhileSaturated_otherClientStillGets503() throws Exception {
    startBlocking(settings(1, MAX_IN_FLIGHT));
    List<CompletableFuture<HttpResponse<String>>> admitted = saturate();
    for (int i = 0; i < 50; i++) {
      Socket stalled = HttpText.connect(listener.port());
      sockets.add(stalled);
      HttpText.send(stalled, "GET /fa");
    }

    HttpResponse<String> refused = send("/fast").get(10, TimeUnit.SECONDS);

    assertThat(refused.statusCode()).isEqualTo(503);
    assertThat(refused.body()).startsWith("{\"code\":14,");
    assertThat(saturatedCount()).isEqualTo(1.0);
    release.complete(HttpAnswer.json(200, "{}"));
    for (CompletableFuture<HttpResponse<String>> f : admitted) {
      assertThat(f.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
  }

  @Test
  void request_moreWaitingThanThreads_noneHoldsAThread() throws Exception {
    startBlocking(settings(1, 100));
    List<CompletableFuture<HttpResponse<String>>> waiting = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      waiting.add(send("/block"));
    }
    Await.until(WAIT, () -> entered.get() == 20, "all 20 requests in flight on one thread");

    HttpResponse<String> fast = send("/fast").get(10, TimeUnit.SECONDS);

    assertThat(fast.statusCode()).isEqualTo(200);
    Await.until(WAIT, () -> listener.inFlight() == 20, "the 20 waiting ones still in flight");
    release.complete(HttpAnswer.json(200, "{}"));
    for (CompletableFuture<HttpResponse<String>> f : waiting) {
      assertThat(f.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
  }

  @Test
  void request_probeRouteWhileSaturated_servedAndOtherRoutes503() throws Exception {
    startBlocking(settings(1, MAX_IN_FLIGHT));
    List<CompletableFuture<HttpResponse<String>>> admitted = saturate();

    HttpResponse<String> probe = send("/probe").get(10, TimeUnit.SECONDS);
    HttpResponse<String> refused = send("/fast").get(10, TimeUnit.SECONDS);

    assertThat(probe.statusCode()).isEqualTo(200);
    assertThat(probe.body()).isEqualTo("{\"ok\":1}");
    assertThat(refused.statusCode()).isEqualTo(503);
    assertThat(saturatedCount()).isEqualTo(1.0);
    assertThat(admitted).allSatisfy(f -> assertThat(f).isNotDone());
    release.complete(HttpAnswer.json(200, "{}"));
    for (CompletableFuture<HttpResponse<String>> f : admitted) {
      assertThat(f.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
  }

  @Test
  void inFlightGauge_requestsBeingAnswered_reportedWhenScraped() throws Exception {
    startBlocking(settings(1, 4));
    CompletableFuture<HttpResponse<String>> first = send("/block");
    CompletableFuture<HttpResponse<String>> second = send("/block");
    Await.until(WAIT, () -> entered.get() == 2, "two requests in flight");

    assertThat(registry.get(MicrometerMetrics.HTTP_IN_FLIGHT).gauge().value()).isEqualTo(2.0);
    assertThat(registry.get(MicrometerMetrics.HTTP_CONNECTIONS).gauge().value()).isEqualTo(2.0);
    release.complete(HttpAnswer.json(200, "{}"));
    assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(second.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    Await.until(
        WAIT,
        () -> registry.get(MicrometerMetrics.HTTP_IN_FLIGHT).gauge().value() == 0.0,
        "no request in flight");
  }
}
