package dev.weir.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.testkit.Await;
import java.io.IOException;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class HttpListenerTest {

  private final HttpClient client = HttpClient.newHttpClient();
  private HttpListener listener;

  @BeforeEach
  void start() throws Exception {
    listener =
        listen(
            List.of(
                HttpRoute.get("/hello", call -> HttpAnswer.json(200, "{\"hi\":1}").completed()),
                HttpRoute.post("/hello", call -> HttpAnswer.json(201, "{}").completed()),
                HttpRoute.get(
                    "/boom",
                    call -> {
                      throw new IllegalStateException("kaput");
                    }),
                HttpRoute.get(
                    "/failed",
                    call -> CompletableFuture.failedFuture(new IllegalStateException("later")))));
  }

  @AfterEach
  void stop() {
    listener.close();
  }

  private HttpResponse<String> call(String method, String path) throws Exception {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + listener.port() + path))
            .method(method, HttpRequest.BodyPublishers.noBody())
            .build();
    return client.send(request, HttpResponse.BodyHandlers.ofString());
  }

  /** Starts a listener on a free loopback port serving {@code routes}. */
  private static HttpListener listen(List<HttpRoute> routes) throws IOException {
    return HttpListener.builder(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
        .routes(routes)
        .start();
  }

  @Test
  void route_matchingMethodAndPath_handled() throws Exception {
    HttpResponse<String> response = call("GET", "/hello?x=1");

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body()).isEqualTo("{\"hi\":1}");
    assertThat(response.headers().firstValue("content-type")).contains("application/json");
    assertThat(call("POST", "/hello").statusCode()).isEqualTo(201);
  }

  @Test
  void route_unknownPath_404GatewayError() throws Exception {
    HttpResponse<String> response = call("GET", "/nope");

    assertThat(response.statusCode()).isEqualTo(404);
    assertThat(response.body()).isEqualTo("{\"code\":5,\"message\":\"Not Found\",\"details\":[]}");
  }

  @Test
  void route_wrongMethod_405WithAllow() throws Exception {
    HttpResponse<String> response = call("DELETE", "/hello");

    assertThat(response.statusCode()).isEqualTo(405);
    assertThat(response.headers().firstValue("allow")).contains("GET, POST");
    assertThat(response.body())
        .isEqualTo("{\"code\":12,\"message\":\"Method Not Allowed\",\"details\":[]}");
  }

  @Test
  void route_handlerThrows_500AndListenerKeepsServing() throws Exception {
    HttpResponse<String> response = call("GET", "/boom");

    assertThat(response.statusCode()).isEqualTo(500);
    assertThat(response.body()).contains("\"code\":13").contains("kaput");
    assertThat(call("GET", "/hello").statusCode()).isEqualTo(200);
  }

  @Test
  void route_answerHttpCannotCarry_500AndTheRequestLeavesInFlight() throws Exception {
    try (HttpListener odd =
        listen(
            List.of(
                HttpRoute.get(
                    "/odd",
                    call -> HttpAnswer.json(200, "{}").withHeader("Bad/Name", "x").completed()),
                HttpRoute.get(
                    "/split",
                    call ->
                        HttpAnswer.json(200, "{}").withHeader("X-Ok", "a\r\nX-Injected: 1")
                            .completed())))) {
      for (String path : List.of("/odd", "/split")) {
        HttpRequest request =
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + odd.port() + path))
                .timeout(Duration.ofSeconds(5))
                .build();

        HttpResponse<String> response = client.send(request, HttpResponse.BodyHandlers.ofString());

        assertThat(response.statusCode()).as(path).isEqualTo(500);
        assertThat(response.body()).as(path).contains("\"code\":13");
        assertThat(response.headers().firstValue("x-injected")).as(path).isEmpty();
      }
      Await.until(Duration.ofSeconds(5), () -> odd.inFlight() == 0, "no request left in flight");
    }
  }

  @Test
  void route_countingTheAnswerFails_answerStillWritten() throws Exception {
    try (HttpListener counted =
        HttpListener.builder(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .routes(List.of(HttpRoute.get("/hi", call -> HttpAnswer.json(200, "{}").completed())))
            .metrics(
                new dev.weir.core.metrics.WeirMetrics() {
                  @Override
                  public void httpRequest(String route, int status, long nanos) {
                    throw new IllegalStateException("meter registry closed");
                  }
                },
                new dev.weir.core.testkit.FakeClock())
            .start()) {
      HttpRequest request =
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + counted.port() + "/hi"))
              .timeout(Duration.ofSeconds(5))
              .build();

      assertThat(client.send(request, HttpResponse.BodyHandlers.ofString()).statusCode())
          .isEqualTo(200);
      Await.until(Duration.ofSeconds(5), () -> counted.inFlight() == 0, "request left in flight");
    }
  }

  @Test
  void route_handlerStageFails_500NamingTheCause() throws Exception {
    HttpResponse<String> response = call("GET", "/failed");

    assertThat(response.statusCode()).isEqualTo(500);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":13,\"message\":\"internal error: java.lang.IllegalStateException: later\","
                + "\"details\":[]}");
  }

  @Test
  void route_traceContextHeaders_reachTheHandlerOnlyWhenSent() throws Exception {
    String parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    List<Map<String, String>> seen =
        traceContextsOf(
            List.of(
                List.of("Traceparent", parent),
                List.of("traceparent", parent, "tracestate", "vendor=1"),
                List.of("tracestate", "vendor=1"),
                List.of()));

    assertThat(seen)
        .containsExactly(
            Map.of("traceparent", parent),
            Map.of("traceparent", parent, "tracestate", "vendor=1"),
            Map.of(),
            Map.of());
  }

  @Test
  void route_traceContextHeadersRepeated_twoTraceparentsIgnoredTracestatesCombined()
      throws Exception {
    String first = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    String second = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    List<Map<String, String>> seen =
        traceContextsOf(
            List.of(
                List.of("traceparent", first, "traceparent", second),
                List.of("traceparent", first, "tracestate", "a=1", "tracestate", "b=2")));

    assertThat(seen)
        .containsExactly(Map.of(), Map.of("traceparent", first, "tracestate", "a=1,b=2"));
  }

  @Test
  void route_emptyTracestateHeaders_skippedWhenCombined() throws Exception {
    String parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    List<Map<String, String>> seen =
        traceContextsOf(
            List.of(
                List.of(
                    "traceparent", parent, "tracestate", "a=1", "tracestate", "",
                    "tracestate", "b=2"),
                List.of("traceparent", parent, "tracestate", "")));

    assertThat(seen)
        .containsExactly(
            Map.of("traceparent", parent, "tracestate", "a=1,b=2"),
            Map.of("traceparent", parent));
  }

  /**
   * The trace contexts a route's handler sees for POSTs sent one after another, each with the
   * headers of one list of alternating names and values, in the order they are listed.
   */
  private List<Map<String, String>> traceContextsOf(List<List<String>> headersOfEachPost)
      throws Exception {
    List<Map<String, String>> seen = new CopyOnWriteArrayList<>();
    HttpListener traced =
        listen(
            List.of(
                HttpRoute.post(
                    "/traced",
                    call -> {
                      seen.add(call.traceContext());
                      return HttpAnswer.json(200, "{}").completed();
                    })));
    try {
      URI uri = URI.create("http://127.0.0.1:" + traced.port() + "/traced");
      for (List<String> headers : headersOfEachPost) {
        HttpRequest.Builder post = HttpRequest.newBuilder(uri).POST(BodyPublishers.noBody());
        for (int i = 0; i < headers.size(); i += 2) {
          post.header(headers.get(i), headers.get(i + 1));
        }
        client.send(post.build(), BodyHandlers.ofString());
      }
    } finally {
      traced.close();
    }
    return seen;
  }

  @Test
  void route_answerCompletesLater_writtenThenConnectionKeptAlive() throws Exception {
    CompletableFuture<HttpAnswer> later = new CompletableFuture<>();
    HttpListener deferred =
        listen(
            List.of(HttpRoute.get("/later", call -> later)));
    try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), deferred.port())) {
      socket.setSoTimeout(10_000);
      OutputStream out = socket.getOutputStream();
      out.write("GET /later HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      Await.until(Duration.ofSeconds(10), () -> deferred.inFlight() == 1, "request in flight");

      later.complete(HttpAnswer.json(200, "{\"late\":true}"));

      String first = HttpText.readResponse(socket.getInputStream());
      assertThat(first).startsWith("HTTP/1.1 200 OK\r\n").endsWith("\r\n\r\n{\"late\":true}");
      assertThat(first).doesNotContainIgnoringCase("connection: close");
      out.write("GET /later HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      assertThat(HttpText.readResponse(socket.getInputStream())).startsWith("HTTP/1.1 200 OK");
    } finally {
      deferred.stop(Duration.ZERO);
    }
  }

  @Test
  void http10KeepAlive_answerSaysKeepAliveAndConnectionServesTheNextRequest() throws Exception {
    try (Socket socket = HttpText.connect(listener.port())) {
      HttpText.send(socket, "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");

      String first = HttpText.readResponse(socket.getInputStream());

      assertThat(first)
          .startsWith("HTTP/1.1 200 OK\r\n")
          .containsIgnoringCase("\r\nconnection: keep-alive\r\n");
      HttpText.send(socket, "GET /hello HTTP/1.0\r\n\r\n");
      String second = HttpText.readResponse(socket.getInputStream());
      assertThat(second)
          .startsWith("HTTP/1.1 200 OK\r\n")
          .containsIgnoringCase("\r\nconnection: close\r\n");
      assertThat(HttpText.closedByServer(socket)).isTrue();
    }
  }

  @Test
  void http11_keptAliveAnswerCarriesNoConnectionHeader() throws Exception {
    try (Socket socket = HttpText.connect(listener.port())) {
      HttpText.send(socket, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");

      assertThat(HttpText.readResponse(socket.getInputStream()))
          .startsWith("HTTP/1.1 200 OK\r\n")
          .doesNotContainIgnoringCase("connection:");
    }
  }

  @Test
  void stop_exchangeInFlight_waitsForItThenCloses() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    HttpListener slow =
        listen(
            List.of(
                HttpRoute.get(
                    "/slow",
                    call -> {
                      entered.countDown();
                      return CompletableFuture.supplyAsync(
                          () -> {
                            awaitQuietly(release);
                            return HttpAnswer.json(200, "{}");
                          });
                    })));
    CompletableFuture<HttpResponse<String>> inFlight =
        client.sendAsync(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + slow.port() + "/slow")).build(),
            HttpResponse.BodyHandlers.ofString());
    entered.await();
    CompletableFuture<Void> stopped =
        CompletableFuture.runAsync(() -> slow.stop(Duration.ofSeconds(30)));

    release.countDown();

    assertThat(inFlight.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    stopped.get(10, TimeUnit.SECONDS);
    assertThatThrownBy(() -> new Socket("127.0.0.1", slow.port()).close())
        .isInstanceOf(ConnectException.class);
  }

  @Test
  void stop_pipelinedRequestHalfReceived_keptToBeAnswered503() throws Exception {
    CompletableFuture<HttpAnswer> later = new CompletableFuture<>();
    // inFlight() alone can count a request answered a moment ago whose place is not yet let go.
    CountDownLatch laterCalled = new CountDownLatch(1);
    HttpListener draining =
        HttpListener.builder(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .routes(
                List.of(
                    HttpRoute.get(
                        "/later",
                        call -> {
                          laterCalled.countDown();
                          return later;
                        }),
                    HttpRoute.get("/now", call -> HttpAnswer.json(200, "{}").completed()),
                    HttpRoute.post("/now", call -> HttpAnswer.json(200, "{}").completed())))
            .settings(HttpSettings.defaults().withThreads(1))
            .start();
    try (Socket busy = HttpText.connect(draining.port());
        Socket idle = HttpText.connect(draining.port());
        Socket pipelined = HttpText.connect(draining.port())) {
      HttpText.send(idle, "GET /now HTTP/1.1\r\nHost: x\r\n\r\n");
      assertThat(HttpText.readResponse(idle.getInputStream())).startsWith("HTTP/1.1 200 OK");
      HttpText.send(
          pipelined,
          "GET /now HTTP/1.1\r\nHost: x\r\n\r\n"
              + "POST /now HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n{}");
      assertThat(HttpText.readResponse(pipelined.getInputStream())).startsWith("HTTP/1.1 200 OK");
      HttpText.send(busy, "GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
      Await.until(
          Duration.ofSeconds(10),
          () -> laterCalled.getCount() == 0 && draining.inFlight() == 1,
          "/later in flight, and the requests before it let go");

      Thread stopping = new Thread(() -> draining.stop(Duration.ofSeconds(30)));
      stopping.start();
      assertThat(HttpText.closedByServer(idle)).isTrue();
      // The body's end comes after stop() has told every connection to drain, and waits for the
      // request in flight.
      Await.until(
          Duration.ofSeconds(10),
          () -> stopping.getState() == Thread.State.TIMED_WAITING,
          "stop() waits for the request in flight");
      HttpText.send(pipelined, "  ");

      String refused = HttpText.readResponse(pipelined.getInputStream());
      assertThat(refused)
          .startsWith("HTTP/1.1 503 Service Unavailable\r\n")
          .containsIgnoringCase("connection: close")
          .contains("server is shutting down");
      later.complete(HttpAnswer.json(200, "{}"));
      stopping.join(10_000);
      assertThat(stopping.isAlive()).isFalse();
    } finally {
      draining.stop(Duration.ZERO);
    }
  }

  @Test
  void stop_inFlightAndIdleConnections_idleClosedAtOnceNewRefusedInFlightAnsweredWithClose()
      throws Exception {
    CompletableFuture<HttpAnswer> later = new CompletableFuture<>();
    // inFlight() alone can count a request answered a moment ago whose place is not yet let go.
    CountDownLatch laterCalled = new CountDownLatch(1);
    HttpListener draining =
        listen(
            List.of(
                HttpRoute.get(
                        "/later",
                        call -> {
                          laterCalled.countDown();
                          return later;
                        }),
                HttpRoute.get("/now", call -> HttpAnswer.json(200, "{}").completed())));
    try (Socket busy = HttpText.connect(draining.port());
        Socket idle = HttpText.connect(draining.port())) {
      HttpText.send(idle, "GET /now HTTP/1.1\r\nHost: x\r\n\r\n");
      assertThat(HttpText.readResponse(idle.getInputStream())).startsWith("HTTP/1.1 200 OK");
      HttpText.send(busy, "GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
      Await.until(
          Duration.ofSeconds(10),
          () -> laterCalled.getCount() == 0 && draining.inFlight() == 1,
          "/later in flight, and the requests before it let go");

      CompletableFuture<Void> stopped =
          CompletableFuture.runAsync(() -> draining.stop(Duration.ofSeconds(30)));

      assertThat(HttpText.closedByServer(idle)).isTrue();
      assertThatThrownBy(() -> new Socket("127.0.0.1", draining.port()).close())
          .isInstanceOf(ConnectException.class);
      assertThat(stopped).isNotDone();
      later.complete(HttpAnswer.json(200, "{\"late\":true}"));
      String answer = HttpText.readResponse(busy.getInputStream());
      assertThat(answer).startsWith("HTTP/1.1 200 OK").containsIgnoringCase("connection: close");
      stopped.get(10, TimeUnit.SECONDS);
    } finally {
      draining.stop(Duration.ZERO);
    }
  }

  @Test
  void stop_inFlightNeverAnswered_returnsAfterGraceAndCutsTheConnection() throws Exception {
    HttpListener stuck =
        listen(
            List.of(HttpRoute.get("/never", call -> new CompletableFuture<>())));
    try (Socket socket = HttpText.connect(stuck.port())) {
      HttpText.send(socket, "GET /never HTTP/1.1\r\nHost: x\r\n\r\n");
      Await.until(Duration.ofSeconds(10), () -> stuck.inFlight() == 1, "request in flight");
      long start = System.nanoTime();

      stuck.stop(Duration.ofMillis(300));

      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .isGreaterThanOrEqualTo(Duration.ofMillis(300))
          .isLessThan(Duration.ofSeconds(5));
      assertThat(HttpText.closedByServer(socket)).isTrue();
    }
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Test
  void router_duplicateRoute_rejected() {
    HttpHandler nothing = call -> HttpAnswer.json(200, "{}").completed();

    assertThatThrownBy(
            () ->
                new RouteTable(List.of(HttpRoute.get("/a", nothing), HttpRoute.get("/a", nothing))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("duplicate route GET /a");
  }

  @Test
  void errorBody_specialCharacters_escaped() {
    assertThat(HttpAnswer.errorBody(3, "bad \"x\"\n\\"))
        .isEqualTo("{\"code\":3,\"message\":\"bad \\\"x\\\"\\n\\\\\",\"details\":[]}");
  }
}
