package dev.weir.core.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.metrics.MicrometerMetrics;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.testkit.Await;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class HttpSaturationTest {

  private static final int THREADS = 2;
  private static final int QUEUE = 3;
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final HttpClient client =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final CountDownLatch entered = new CountDownLatch(THREADS);
  private final CountDownLatch release = new CountDownLatch(1);
  private final List<Socket> sockets = new ArrayList<>();
  private HttpListener listener;

  @AfterEach
  void stop() throws IOException {
    release.countDown();
    for (Socket socket : sockets) {
      socket.close();
    }
    if (listener != null) {
      listener.close();
    }
  }

  private void startBlocking(HttpSettings settings) throws Exception {
    startBlocking(settings, HttpWorkers.REFUSAL_THREADS, HttpWorkers.REFUSAL_QUEUE);
  }

  private void startBlocking(HttpSettings settings, int refusalThreads, int refusalQueue)
      throws Exception {
    listener =
        HttpListener.start(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            List.of(
                HttpRoute.get(
                    "/block",
                    ex -> {
                      entered.countDown();
                      try {
                        release.await();
                      } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                      }
                      HttpResponses.sendJson(ex, 200, "{}");
                    }),
                HttpRoute.get("/fast", ex -> HttpResponses.sendJson(ex, 200, "{}")),
                HttpRoute.probe("/probe", ex -> HttpResponses.sendJson(ex, 200, "{\"ok\":1}"))),
            null,
            settings,
            new MicrometerMetrics(registry),
            refusalThreads,
            refusalQueue);
  }

  /** Fills every worker and the queue with requests that block until {@link #release}. */
  private List<CompletableFuture<HttpResponse<String>>> saturate() throws Exception {
    List<CompletableFuture<HttpResponse<String>>> admitted = new ArrayList<>();
    for (int i = 0; i < THREADS; i++) {
      admitted.add(send("/block"));
    }
    assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
    for (int i = 0; i < QUEUE; i++) {
      admitted.add(send("/block"));
    }
    awaitQueued(QUEUE);
    return admitted;
  }

  /** Opens a connection that sends part of a request line and then nothing more. */
  private Socket stalledClient() throws IOException {
    Socket socket = new Socket(InetAddress.getLoopbackAddress(), listener.port());
    sockets.add(socket);
    socket.getOutputStream().write("GET /fa".getBytes(StandardCharsets.US_ASCII));
    socket.getOutputStream().flush();
    return socket;
  }

  /** Returns whether the server closed {@code socket} before sending a byte. */
  private static boolean closedWithoutAnswer(Socket socket) throws IOException {
    try {
      return socket.getInputStream().read() == -1;
    } catch (SocketException reset) {
      return true;
    }
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    Await.until(WAIT, condition, what);
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

  private void awaitQueued(int n) throws InterruptedException {
    await(() -> listener.queued() == n, n + " requests queued");
  }

  @Test
  void request_threadsAndQueueFull_503WithGatewayBodyThenAdmittedOnesComplete() throws Exception {
    startBlocking(new HttpSettings(THREADS, QUEUE));
    List<CompletableFuture<HttpResponse<String>>> admitted = saturate();

    HttpResponse<String> refused = send("/fast").get(10, TimeUnit.SECONDS);

    assertThat(refused.statusCode()).isEqualTo(503);
    assertThat(refused.headers().firstValue("content-type")).contains("application/json");
    assertThat(refused.body())
        .isEqualTo(
            HttpResponses.errorBody(
                14,
                "HTTP listener saturated: all 2 worker threads are busy and 3 requests are waiting"
                    + " (the most allowed); retry later, or raise WEIR_HTTP_MAX_QUEUE or"
                    + " WEIR_HTTP_THREADS"));
    assertThat(saturatedCount()).isEqualTo(1.0);
    assertThat(admitted).allSatisfy(f -> assertThat(f).isNotDone());

    release.countDown();

    for (CompletableFuture<HttpResponse<String>> f : admitted) {
      assertThat(f.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
    assertThat(send("/fast").get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(saturatedCount()).isEqualTo(1.0);
  }

  @Test
  void request_stalledClientWhileSaturated_otherClientStillGets503() throws Exception {
    startBlocking(new HttpSettings(THREADS, QUEUE));
    List<CompletableFuture<HttpResponse<String>>> admitted = saturate();
    stalledClient();
    await(() -> listener.overflowRunning() == 1, "the stalled request is being read");

    HttpResponse<String> refused = send("/fast").get(10, TimeUnit.SECONDS);

    assertThat(refused.statusCode()).isEqualTo(503);
    assertThat(refused.body()).startsWith("{\"code\":14,");
    assertThat(saturatedCount()).isEqualTo(1.0);
    release.countDown();
    for (CompletableFuture<HttpResponse<String>> f : admitted) {
      assertThat(f.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
  }

  @Test
  void request_refusalThreadsSaturatedToo_connectionClosedWithoutAnswerAndCountedOnce()
      throws Exception {
    startBlocking(new HttpSettings(THREADS, QUEUE), 1, 1);
    List<CompletableFuture<HttpResponse<String>>> admitted = saturate();
    stalledClient();
    await(() -> listener.overflowRunning() == 1, "the first stalled request is being read");
    stalledClient();
    await(() -> listener.overflowQueued() == 1, "the second stalled request is waiting");

    try (Socket dropped = new Socket(InetAddress.getLoopbackAddress(), listener.port())) {
      dropped.setSoTimeout((int) TimeUnit.SECONDS.toMillis(10));
      dropped
          .getOutputStream()
          .write("GET /fast HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      dropped.getOutputStream().flush();

      assertThat(closedWithoutAnswer(dropped)).isTrue();
    }
    assertThat(saturatedCount()).isEqualTo(1.0);
    release.countDown();
    for (CompletableFuture<HttpResponse<String>> f : admitted) {
      assertThat(f.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
  }

  @Test
  void request_probeRouteWhileSaturated_servedAndOtherRoutes503() throws Exception {
    startBlocking(new HttpSettings(THREADS, QUEUE));
    List<CompletableFuture<HttpResponse<String>>> admitted = saturate();

    HttpResponse<String> probe = send("/probe").get(10, TimeUnit.SECONDS);
    HttpResponse<String> refused = send("/fast").get(10, TimeUnit.SECONDS);

    assertThat(probe.statusCode()).isEqualTo(200);
    assertThat(probe.body()).isEqualTo("{\"ok\":1}");
    assertThat(refused.statusCode()).isEqualTo(503);
    assertThat(saturatedCount()).isEqualTo(1.0);
    assertThat(admitted).allSatisfy(f -> assertThat(f).isNotDone());
    release.countDown();
    for (CompletableFuture<HttpResponse<String>> f : admitted) {
      assertThat(f.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
  }

  @Test
  void queueGauge_requestsWaiting_reportedWhenScraped() throws Exception {
    startBlocking(new HttpSettings(1, 4));
    CompletableFuture<HttpResponse<String>> first = send("/block");
    CompletableFuture<HttpResponse<String>> second = send("/block");
    awaitQueued(1);

    assertThat(registry.get(MicrometerMetrics.HTTP_QUEUE).gauge().value()).isEqualTo(1.0);
    release.countDown();
    assertThat(first.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(second.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
  }
}
