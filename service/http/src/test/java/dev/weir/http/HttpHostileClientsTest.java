package dev.weir.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.testkit.Await;
import dev.weir.core.testkit.FakeClock;
import dev.weir.metrics.micrometer.MicrometerMetrics;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.slf4j.LoggerFactory;

/** Slow, idle and malformed clients on real loopback sockets. */
class HttpHostileClientsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Duration SHORT = Duration.ofMillis(800);
  private static final Duration LONG = Duration.ofMinutes(5);

  /** An answer far larger than any socket buffer between the listener and a client. */
  private static final String LARGE = "{\"pad\":\"" + "x".repeat(8 << 20) + "\"}";

  private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
  private final HttpClient client =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(5))
          .build();
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final ScheduledExecutorService trickle = Executors.newScheduledThreadPool(2);
  private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
  private final Logger root = (Logger) LoggerFactory.getLogger(Logger.ROOT_LOGGER_NAME);
  private HttpListener listener;
  // The answer of the one request to /held, which the test completes.
  private final CompletableFuture<CompletableFuture<HttpAnswer>> held = new CompletableFuture<>();

  @BeforeEach
  void watchLogs() {
    logs.start();
    root.addAppender(logs);
  }

  @AfterEach
  void stop() throws IOException {
    root.detachAppender(logs);
    trickle.shutdownNow();
    for (Socket socket : sockets) {
      socket.close();
    }
    if (listener != null) {
      listener.stop(Duration.ZERO);
    }
  }

  private void start(HttpSettings settings) throws IOException {
    start(settings, new MicrometerMetrics(registry));
  }

  /** A metrics sink whose count of refusals fails (a custom sink with a bug). */
  private static final dev.weir.core.metrics.WeirMetrics REFUSALS_FAIL =
      new dev.weir.core.metrics.WeirMetrics() {
        @Override
        public void refused(RefusalReason reason) {
          throw new IllegalStateException("meter registry closed");
        }
      };

  private void start(HttpSettings settings, dev.weir.core.metrics.WeirMetrics metrics)
      throws IOException {
    listener =
        HttpListener.builder(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .routes(
                List.of(
                    HttpRoute.get("/fast", call -> HttpAnswer.json(200, "{}").completed()),
                    HttpRoute.get("/large", call -> HttpAnswer.json(200, LARGE).completed()),
                    HttpRoute.get(
                        "/held",
                        call -> {
                          CompletableFuture<HttpAnswer> answer = new CompletableFuture<>();
                          held.complete(answer);
                          return answer;
                        }),
                    HttpRoute.post(
                        "/echo",
                        call ->
                            HttpAnswer.json(200, "{\"bytes\":" + call.body().length + "}")
                                .completed()),
                    HttpRoute.probe(
                        "/probe", call -> HttpAnswer.json(200, "{\"ok\":1}").completed())))
            .settings(settings)
            .metrics(metrics, new FakeClock())
            .start();
  }

  private static HttpSettings timeouts(Duration header, Duration body, Duration idle) {
    return HttpSettings.defaults().withThreads(1).withTimeouts(header, body, idle);
  }

  /** Returns settings of one thread whose requests take bodies of at most {@code bytes}. */
  private static HttpSettings bodiesOfAtMost(int bytes) {
    return HttpSettings.defaults().withThreads(1).withMaxBodyBytes(bytes);
  }

  private Socket open() throws IOException {
    Socket socket = HttpText.connect(listener.port());
    sockets.add(socket);
    return socket;
  }

  /**
   * Opens a connection whose receive buffer is as small as the system allows, for a client that
   * reads nothing: the listener's writes to it soon stall.
   */
  private Socket openUnread() throws IOException {
    Socket socket = new Socket();
    sockets.add(socket);
    socket.setReceiveBufferSize(1);
    socket.setSoTimeout((int) WAIT.toMillis());
    socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), listener.port()));
    return socket;
  }

  /** Writes {@code line} to {@code socket} every 100 ms until the socket fails. */
  private void trickle(Socket socket, String line) {
    trickle.scheduleAtFixedRate(
        () -> {
          try {
            HttpText.send(socket, line);
          } catch (IOException closed) {
            throw new IllegalStateException("closed", closed);
          }
        },
        100,
        100,
        TimeUnit.MILLISECONDS);
  }

  private double refused(RefusalReason reason) {
    Counter counter =
        registry.find(MicrometerMetrics.REQUESTS_REFUSED).tag("reason", reason.label()).counter();
    return counter == null ? 0 : counter.count();
  }

  /** Returns the count of {@code weir_http_requests_seconds} of {@code route}, {@code status}. */
  private long httpRequests(String route, String status) {
    Timer timer =
        registry
            .find(MicrometerMetrics.HTTP_REQUESTS)
            .tag("route", route)
            .tag("status", status)
            .timer();
    return timer == null ? 0 : timer.count();
  }

  private HttpResponse<String> get(String path) throws Exception {
    return client
        .sendAsync(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + listener.port() + path))
                .timeout(WAIT)
                .build(),
            HttpResponse.BodyHandlers.ofString())
        .get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  private List<ILoggingEvent> errorsAndNettyWarnings() {
    return logs.list.stream()
        .filter(
            e ->
                e.getLevel().isGreaterOrEqual(Level.ERROR)
                    || (e.getLevel().isGreaterOrEqual(Level.WARN)
                        && (e.getLoggerName().startsWith("io.netty")
                            || e.getLoggerName().startsWith("dev.weir.http"))))
        .toList();
  }

  @Test
  void headerTimeout_clientTricklesHeaderLines_closedAtTimeoutFromConnectionStart()
      throws Exception {
    start(timeouts(SHORT, LONG, LONG));
    Socket slow = open();
    long started = System.nanoTime();
    HttpText.send(slow, "GET /fast HTTP/1.1\r\nHost: x\r\n");
    trickle(slow, "X-Slow: 1\r\n");

    assertThat(HttpText.closedByServer(slow)).isTrue();

    assertThat(Duration.ofNanos(System.nanoTime() - started))
        .isGreaterThanOrEqualTo(SHORT.minusMillis(50))
        .isLessThan(Duration.ofSeconds(5));
    Await.until(WAIT, () -> refused(RefusalReason.HTTP_TIMEOUT) == 1.0, "the timeout counted");
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({
    "request line and part of a field,GET /fast HTTP/1.1\\r\\nX-Slow: 1",
    "request line,GET /fast HTTP/1.1\\r\\n"
  })
  void headerTimeout_partOfAHeadSentWithAnAnsweredRequest_closedAtTheHeaderTimeout(
      String name, String part) throws Exception {
    start(timeouts(SHORT, LONG, LONG));
    Socket slow = open();
    HttpText.send(slow, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n" + unescape(part));
    assertThat(HttpText.readResponse(slow.getInputStream())).startsWith("HTTP/1.1 200 OK\r\n");
    long answered = System.nanoTime();

    assertThat(HttpText.closedByServer(slow)).as("closed by the server within 10 s").isTrue();

    assertThat(Duration.ofNanos(System.nanoTime() - answered))
        .isLessThan(SHORT.plus(Duration.ofSeconds(2)));
    Await.until(WAIT, () -> refused(RefusalReason.HTTP_TIMEOUT) == 1.0, "the timeout counted");
  }

  @Test
  void headerTimeout_connectionSendsNothing_closedWithoutCounting() throws Exception {
    start(timeouts(SHORT, LONG, LONG));
    Socket silent = open();

    assertThat(HttpText.closedByServer(silent)).isTrue();
    assertThat(refused(RefusalReason.HTTP_TIMEOUT)).isZero();
  }

  @Test
  void bodyTimeout_clientTricklesBody_answered408ThenClosed() throws Exception {
    start(timeouts(LONG, SHORT, LONG));
    Socket slow = open();
    HttpText.send(slow, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{");
    trickle(slow, " ");

    String answer = HttpText.readResponse(slow.getInputStream());

    assertThat(answer).startsWith("HTTP/1.1 408 Request Timeout\r\n");
    assertThat(answer)
        .endsWith(
            "{\"code\":4,\"message\":\"request body not complete within 800ms of its head"
                + " (WEIR_HTTP_BODY_TIMEOUT)\",\"details\":[]}");
    assertThat(HttpText.closedByServer(slow)).isTrue();
    assertThat(refused(RefusalReason.HTTP_TIMEOUT)).isEqualTo(1.0);
  }

  @Test
  void bodyTimeout_knownRouteAfterAnAnsweredRequest_408CountedUnderThatRoute() throws Exception {
    start(timeouts(LONG, SHORT, LONG));
    Socket slow = open();
    HttpText.send(
        slow,
        "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n"
            + "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{");

    assertThat(HttpText.readResponse(slow.getInputStream())).startsWith("HTTP/1.1 200 OK\r\n");
    assertThat(HttpText.readResponse(slow.getInputStream()))
        .startsWith("HTTP/1.1 408 Request Timeout\r\n");

    assertThat(httpRequests("/echo", "408")).as("the 408 under its route").isEqualTo(1);
    assertThat(httpRequests("/fast", "408")).isZero();
    assertThat(httpRequests("/fast", "200")).isEqualTo(1);
  }

  @Test
  void bodyTimeout_unknownPath_408CountedUnderNoRoute() throws Exception {
    start(timeouts(LONG, SHORT, LONG));
    Socket slow = open();
    HttpText.send(slow, "POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{");

    assertThat(HttpText.readResponse(slow.getInputStream()))
        .startsWith("HTTP/1.1 408 Request Timeout\r\n");

    assertThat(registry.find(MicrometerMetrics.HTTP_REQUESTS).timers()).isEmpty();
    assertThat(refused(RefusalReason.HTTP_TIMEOUT)).isEqualTo(1.0);
  }

  @Test
  void unfinishedBodies_clientsStallNearlyWholeBodies_oneOverTheBudgetRefused503AndOthersServed()
      throws Exception {
    start(bodiesOfAtMost(1000));
    String head = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n";
    String nearlyWhole = "{\"pad\":\"" + "x".repeat(990);
    List<Socket> stalled = new java.util.ArrayList<>();
    for (int i = 0; i < UnfinishedBodies.LARGEST_BODIES; i++) {
      Socket socket = open();
      HttpText.send(socket, head + nearlyWhole);
      stalled.add(socket);
    }
    assertThat(get("/fast").statusCode()).as("the stalled bodies were read").isEqualTo(200);

    Socket over = open();
    HttpText.send(over, head + nearlyWhole);
    String refusal = HttpText.readResponse(over.getInputStream());

    assertThat(refusal).startsWith("HTTP/1.1 503 Service Unavailable\r\n");
    assertThat(refusal)
        .endsWith(
            "{\"code\":14,\"message\":\"HTTP listener holds 16000 bytes of request bodies not yet"
                + " complete (the most allowed: 16 x WEIR_HTTP_MAX_BODY_SIZE); send the body at once,"
                + " or retry later\",\"details\":[]}");
    assertThat(HttpText.closedByServer(over)).isTrue();
    assertThat(refused(RefusalReason.HTTP_SATURATED)).isEqualTo(1.0);

    HttpText.send(stalled.get(0), "\"}");
    assertThat(HttpText.readResponse(stalled.get(0).getInputStream()))
        .as("a stalled body that completes is answered")
        .startsWith("HTTP/1.1 200 OK\r\n")
        .endsWith("{\"bytes\":1000}");
    Socket next = open();
    HttpText.send(next, head + nearlyWhole);
    assertThat(get("/fast").statusCode()).as("the unfinished body was read").isEqualTo(200);
    HttpText.send(next, "\"}");
    assertThat(HttpText.readResponse(next.getInputStream()))
        .as("the completed body gave its bytes back")
        .startsWith("HTTP/1.1 200 OK\r\n");
  }

  @Test
  void unfinishedBodies_chunkedBodyRefused413_givesItsBytesBackAtOnce() throws Exception {
    start(bodiesOfAtMost(1000));
    Socket chunked = open();
    HttpText.send(
        chunked,
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n384\r\n"
            + "x".repeat(900)
            + "\r\n");
    assertThat(get("/fast").statusCode()).as("the first chunk was read").isEqualTo(200);
    HttpText.send(chunked, "c8\r\n" + "x".repeat(200) + "\r\n");
    assertThat(HttpText.readResponse(chunked.getInputStream()))
        .startsWith("HTTP/1.1 413 ");

    String head = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n";
    for (int i = 0; i < UnfinishedBodies.LARGEST_BODIES; i++) {
      HttpText.send(open(), head + "x".repeat(998));
    }
    assertThat(get("/fast").statusCode()).isEqualTo(200);

    assertThat(refused(RefusalReason.HTTP_SATURATED))
        .as("the refused body, still lingering, holds none of the budget")
        .isZero();
  }

  /**
   * Asserts that {@code slow} is answered 200 and then, for its pipelined request whose body never
   * comes, 408 about the body timeout ({@code SHORT}) after {@code since}, and closed.
   */
  private void assertAnsweredThen408AtTheBodyTimeout(Socket slow, long since) throws Exception {
    assertThat(HttpText.readResponse(slow.getInputStream())).startsWith("HTTP/1.1 200 OK\r\n");
    String late = HttpText.readResponse(slow.getInputStream());

    assertThat(late)
        .startsWith("HTTP/1.1 408 Request Timeout\r\n")
        .contains("(WEIR_HTTP_BODY_TIMEOUT)");
    assertThat(Duration.ofNanos(System.nanoTime() - since))
        .isGreaterThanOrEqualTo(SHORT.minusMillis(50))
        .isLessThan(Duration.ofSeconds(5));
    assertThat(HttpText.closedByServer(slow)).isTrue();
    assertThat(refused(RefusalReason.HTTP_TIMEOUT)).isEqualTo(1.0);
  }

  /**
   * Sends {@code slow} one body byte every 400 ms, four in all: the last comes well past the
   * header timeout ({@code SHORT}) of the first.
   */
  private void trickleFourBodyBytes(Socket slow) {
    for (int part = 1; part <= 4; part++) {
      trickle.schedule(
          () -> {
            HttpText.send(slow, "x");
            return null;
          },
          400L * part,
          TimeUnit.MILLISECONDS);
    }
  }

  /** A request answered at once, then the head of one whose 4-byte body is still to come. */
  private static final String ANSWERED_THEN_HEAD =
      "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n"
          + "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n";

  @Test
  void bodyTimeout_pipelinedHeadArrivesWhileAnswering_answered408AtTheBodyTimeout()
      throws Exception {
    start(timeouts(LONG, SHORT, LONG));
    Socket slow = open();
    HttpText.send(slow, ANSWERED_THEN_HEAD + "{");
    long sent = System.nanoTime();

    assertAnsweredThen408AtTheBodyTimeout(slow, sent);
  }

  @Test
  void bodyTimeout_pipelinedHeadsBodyInPartsWithinIt_servedPastTheHeaderTimeout()
      throws Exception {
    start(timeouts(SHORT, LONG, LONG));
    Socket slow = open();
    HttpText.send(slow, ANSWERED_THEN_HEAD);
    assertThat(HttpText.readResponse(slow.getInputStream())).startsWith("HTTP/1.1 200 OK\r\n");
    trickleFourBodyBytes(slow);

    String answer = HttpText.readResponse(slow.getInputStream());

    assertThat(answer).startsWith("HTTP/1.1 200 OK\r\n").endsWith("{\"bytes\":4}");
    assertThat(refused(RefusalReason.HTTP_TIMEOUT)).isZero();
  }

  /**
   * A request whose answer the test holds, then the head of one whose 4-byte body is still to come,
   * sent in one write: the listener reads them together, so the second head is decoded while the
   * first request is being answered.
   */
  private static final String HELD_THEN_HEAD =
      "GET /held HTTP/1.1\r\nHost: x\r\n\r\n"
          + "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n";

  /** Waits for the request to /held, whose read also decoded what came with it, and answers it. */
  private void answerHeld() throws Exception {
    held.get(WAIT.toSeconds(), TimeUnit.SECONDS).complete(HttpAnswer.json(200, "{}"));
  }

  @Test
  void bodyTimeout_pipelinedHeadDecodedWhileAnswerHeld_answered408AtTheBodyTimeoutOfTheAnswer()
      throws Exception {
    start(timeouts(LONG, SHORT, LONG));
    Socket slow = open();
    HttpText.send(slow, HELD_THEN_HEAD + "{");
    answerHeld();
    long answered = System.nanoTime();

    assertAnsweredThen408AtTheBodyTimeout(slow, answered);
  }

  @Test
  void bodyTimeout_pipelinedHeadDecodedWhileAnswerHeld_bodyInPartsServedPastTheHeaderTimeout()
      throws Exception {
    start(timeouts(SHORT, LONG, LONG));
    Socket slow = open();
    HttpText.send(slow, HELD_THEN_HEAD);
    answerHeld();
    assertThat(HttpText.readResponse(slow.getInputStream())).startsWith("HTTP/1.1 200 OK\r\n");
    trickleFourBodyBytes(slow);

    String answer = HttpText.readResponse(slow.getInputStream());

    assertThat(answer).startsWith("HTTP/1.1 200 OK\r\n").endsWith("{\"bytes\":4}");
    assertThat(refused(RefusalReason.HTTP_TIMEOUT)).isZero();
  }

  /** The pipelined requests {@code pipelinedBodies_...} tries to send while an answer is held. */
  private static final int PIPELINED = 1200;

  /** Returns the request with body size {@code 60000 - i}, so that answers show their order. */
  private static byte[] pipelinedEcho(int i) {
    int length = 60_000 - i;
    return ("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: "
            + length
            + "\r\n\r\n"
            + "x".repeat(length))
        .getBytes(StandardCharsets.US_ASCII);
  }

  @Test
  void pipelinedBodies_sentWhileAnAnswerIsHeld_readingStopsThenAllAnsweredInOrder()
      throws Exception {
    start(bodiesOfAtMost(65536));
    Socket pipelined = open();
    java.io.ByteArrayOutputStream requests = new java.io.ByteArrayOutputStream();
    requests.write("GET /held HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    for (int i = 0; i < PIPELINED; i++) {
      requests.write(pipelinedEcho(i));
    }
    byte[] stream = requests.toByteArray();
    java.util.concurrent.atomic.AtomicLong written = new java.util.concurrent.atomic.AtomicLong();
    CompletableFuture<Void> writing =
        CompletableFuture.runAsync(
            () -> {
              try {
                java.io.OutputStream out = pipelined.getOutputStream();
                // in writes that end part-way through a body, as a client streaming them does
                for (int at = 0; at < stream.length; at += 50_000) {
                  int length = Math.min(50_000, stream.length - at);
                  out.write(stream, at, length);
                  written.addAndGet(length);
                }
              } catch (IOException e) {
                throw new IllegalStateException(e);
              }
            },
            trickle);

    assertThatThrownBy(() -> writing.get(4, TimeUnit.SECONDS))
        .as("the listener stopped reading; %d bytes written", written.get())
        .isInstanceOf(java.util.concurrent.TimeoutException.class);
    assertThat(written.get())
        .as("bytes the listener and the socket buffers took while the answer was held")
        .isLessThan(12L << 20);

    answerHeld();
    java.io.InputStream in = new java.io.BufferedInputStream(pipelined.getInputStream());
    assertThat(HttpText.readResponse(in)).startsWith("HTTP/1.1 200 OK\r\n").endsWith("{}");
    for (int i = 0; i < PIPELINED; i++) {
      assertThat(HttpText.readResponse(in))
          .as("answer %d", i)
          .startsWith("HTTP/1.1 200 OK\r\n")
          .endsWith("{\"bytes\":" + (60_000 - i) + "}");
    }
    writing.get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  /**
   * Starts a listener that takes bodies of at most 100 bytes and sends it, on one connection, a
   * request to /held and the head of a POST to /echo with the header lines {@code fields}; answers
   * the held request and asserts its answer; returns the connection, whose next answer is the
   * POST's.
   */
  private Socket pipelinedAfterAHeldAnswer(String fields) throws Exception {
    start(bodiesOfAtMost(100));
    Socket pipelined = open();
    HttpText.send(
        pipelined,
        "GET /held HTTP/1.1\r\nHost: x\r\n\r\n"
            + "POST /echo HTTP/1.1\r\nHost: x\r\n"
            + fields
            + "\r\n");
    answerHeld();
    assertThat(HttpText.readResponse(pipelined.getInputStream()))
        .as("the answer to the first request")
        .startsWith("HTTP/1.1 200 OK\r\n")
        .endsWith("{}");
    return pipelined;
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({"Content-Length only,''", "waiting for 100 Continue,'Expect: 100-continue\r\n'"})
  void bodyTooLarge_pipelinedAfterAHeldAnswer_413AfterThatAnswer(String name, String expect)
      throws Exception {
    Socket pipelined = pipelinedAfterAHeldAnswer("Content-Length: 5000\r\n" + expect);

    assertThat(HttpText.readResponse(pipelined.getInputStream()))
        .startsWith("HTTP/1.1 413 Request Entity Too Large\r\n")
        .contains("(WEIR_HTTP_MAX_BODY_SIZE)");
    assertThat(HttpText.closedByServer(pipelined)).isTrue();
    assertThat(refused(RefusalReason.HTTP_BODY_TOO_LARGE)).isEqualTo(1.0);
  }

  @Test
  void expectContinue_pipelinedAfterAHeldAnswer_100ContinueAfterThatAnswer() throws Exception {
    Socket pipelined =
        pipelinedAfterAHeldAnswer("Content-Length: 4\r\nExpect: 100-continue\r\n");

    assertThat(HttpText.readResponse(pipelined.getInputStream()))
        .isEqualTo("HTTP/1.1 100 Continue\r\n\r\n");
    HttpText.send(pipelined, "{}  ");
    assertThat(HttpText.readResponse(pipelined.getInputStream()))
        .startsWith("HTTP/1.1 200 OK\r\n")
        .endsWith("{\"bytes\":4}");
  }

  @Test
  void expectUnsupported_pipelinedAfterAHeldAnswer_417AfterThatAnswer() throws Exception {
    Socket pipelined = pipelinedAfterAHeldAnswer("Content-Length: 4\r\nExpect: foo\r\n");

    assertThat(HttpText.readResponse(pipelined.getInputStream()))
        .startsWith("HTTP/1.1 417 Expectation Failed\r\n")
        .contains("header 'Expect' is 'foo'; only '100-continue' is supported");
  }

  @Test
  void expectUnsupported_contentLengthOverTheLimit_answered417AndNotCountedAsTooLarge()
      throws Exception {
    start(bodiesOfAtMost(100));
    Socket socket = open();
    HttpText.send(
        socket,
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nExpect: foo\r\n\r\n");

    assertThat(HttpText.readResponse(socket.getInputStream()))
        .startsWith("HTTP/1.1 417 Expectation Failed\r\n");
    assertThat(refused(RefusalReason.HTTP_BODY_TOO_LARGE)).isZero();
  }

  @Test
  void bodyTimeout_countingTheTimeoutFails_stillAnswered408ThenClosed() throws Exception {
    start(timeouts(LONG, SHORT, LONG), REFUSALS_FAIL);
    Socket slow = open();
    HttpText.send(slow, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{");
    trickle(slow, " ");

    assertThat(HttpText.readResponse(slow.getInputStream()))
        .startsWith("HTTP/1.1 408 Request Timeout\r\n");
    assertThat(HttpText.closedByServer(slow)).isTrue();
  }

  @Test
  void connectionCap_countingTheEvictionFails_theNewConnectionIsCountedAndServed()
      throws Exception {
    start(timeouts(LONG, LONG, LONG).withMaxConnections(2), REFUSALS_FAIL);
    for (int i = 0; i < 2; i++) {
      open();
      int opened = i + 1;
      Await.until(WAIT, () -> listener.connectionsOpen() == opened, opened + " counted");
    }
    Socket fresh = open();
    HttpText.send(fresh, "GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");

    assertThat(HttpText.readResponse(fresh.getInputStream())).startsWith("HTTP/1.1 200 OK");
    assertThat(HttpText.closedByServer(fresh)).isTrue();
    Await.until(
        WAIT, () -> listener.connectionsOpen() == 1, "the evicted and the served one left");
  }

  @Test
  void idleTimeout_keptAliveConnectionWaits_closedAfterIt() throws Exception {
    start(timeouts(LONG, LONG, SHORT));
    Socket kept = open();
    HttpText.send(kept, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
    assertThat(HttpText.readResponse(kept.getInputStream())).startsWith("HTTP/1.1 200 OK");
    long answered = System.nanoTime();

    assertThat(HttpText.closedByServer(kept)).isTrue();

    assertThat(Duration.ofNanos(System.nanoTime() - answered))
        .isGreaterThanOrEqualTo(SHORT.minusMillis(50));
    assertThat(refused(RefusalReason.HTTP_TIMEOUT)).isZero();
  }

  @Test
  void writeTimeout_clientNeverReadsLargeAnswer_closedAndItsPlaceInFlightFreed() throws Exception {
    start(timeouts(LONG, LONG, LONG).withMaxInFlight(1).withWriteTimeout(SHORT));
    Socket unread = openUnread();
    long sent = System.nanoTime();
    HttpText.send(unread, "GET /large HTTP/1.1\r\nHost: x\r\n\r\n");
    Await.until(WAIT, () -> listener.inFlight() == 1, "the large answer being written");
    assertThat(get("/fast").statusCode()).isEqualTo(503);

    Await.until(WAIT, () -> listener.inFlight() == 0, "the unread answer's place freed");

    assertThat(Duration.ofNanos(System.nanoTime() - sent))
        .isGreaterThanOrEqualTo(SHORT.minusMillis(50));
    assertThat(get("/fast").statusCode()).isEqualTo(200);
    assertThat(HttpText.bytesUntilClosed(unread)).isLessThan(LARGE.length());
    assertThat(refused(RefusalReason.HTTP_TIMEOUT)).isEqualTo(1.0);
    assertThat(errorsAndNettyWarnings()).isEmpty();
  }

  @Test
  void writeTimeout_clientStopsReadingMidPipeline_closedAndItsPlaceInFlightFreed()
      throws Exception {
    start(timeouts(LONG, LONG, LONG).withMaxInFlight(1).withWriteTimeout(SHORT));
    Socket pipelined = openUnread();
    long sent = System.nanoTime();
    HttpText.send(
        pipelined,
        "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n"
            + "GET /large HTTP/1.1\r\nHost: x\r\n\r\n"
            + "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");
    assertThat(HttpText.readResponse(pipelined.getInputStream())).startsWith("HTTP/1.1 200 OK");

    // The first answer's place may still be held for a moment after its bytes were read, so the
    // test waits for the write timeout itself, not for the count of places in flight to move.
    Await.until(
        WAIT, () -> refused(RefusalReason.HTTP_TIMEOUT) == 1.0, "the large answer's write timeout");
    Await.until(WAIT, () -> listener.inFlight() == 0, "the unread answer's place freed");

    assertThat(Duration.ofNanos(System.nanoTime() - sent))
        .isGreaterThanOrEqualTo(SHORT.minusMillis(50));
    assertThat(get("/fast").statusCode()).isEqualTo(200);
    assertThat(HttpText.bytesUntilClosed(pipelined)).isLessThan(LARGE.length());
    assertThat(refused(RefusalReason.HTTP_TIMEOUT)).isEqualTo(1.0);
    assertThat(errorsAndNettyWarnings()).isEmpty();
  }

  @Test
  void slowClients_manyTricklingHeadsAndBodies_legitimateRequestsAndProbesAnswered()
      throws Exception {
    start(timeouts(LONG, LONG, LONG));
    for (int i = 0; i < 100; i++) {
      Socket head = open();
      HttpText.send(head, "POST /echo HTTP/1.1\r\nHost: x\r\n");
      trickle(head, "X-Slow: " + i + "\r\n");
      Socket body = open();
      HttpText.send(body, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{");
      trickle(body, " ");
    }

    List<CompletableFuture<Integer>> legitimate = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      String path = i % 2 == 0 ? "/fast" : "/probe";
      legitimate.add(CompletableFuture.supplyAsync(() -> statusOf(path)));
    }

    for (CompletableFuture<Integer> status : legitimate) {
      assertThat(status.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(200);
    }
    assertThat(listener.connectionsOpen()).isGreaterThanOrEqualTo(200);
  }

  private int statusOf(String path) {
    try {
      return get(path).statusCode();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void connectionCap_fullOfIdleAndTricklingConnections_oldestClosedToServeNewOne()
      throws Exception {
    start(timeouts(LONG, LONG, LONG).withMaxConnections(5));
    List<Socket> stalled = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      Socket socket = open();
      if (i % 2 == 1) {
        HttpText.send(socket, "GET /fast HTTP/1.1\r\nHost: x\r\n");
      }
      stalled.add(socket);
      int opened = i + 1;
      Await.until(WAIT, () -> listener.connectionsOpen() == opened, opened + " counted");
    }

    HttpResponse<String> fresh = get("/fast");

    assertThat(fresh.statusCode()).isEqualTo(200);
    assertThat(HttpText.closedByServer(stalled.get(0))).isTrue();
    assertThat(refused(RefusalReason.HTTP_TOO_MANY_CONNECTIONS)).isEqualTo(1.0);
    Await.until(WAIT, () -> listener.connectionsOpen() <= 5, "the cap holds");
  }

  @Test
  void connectionCap_everyConnectionBeingAnswered_newOneRefused503AndClosed() throws Exception {
    CompletableFuture<HttpAnswer> release = new CompletableFuture<>();
    listener =
        HttpListener.builder(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .routes(List.of(HttpRoute.get("/block", call -> release)))
            .settings(HttpSettings.defaults().withThreads(1).withMaxConnections(5))
            .metrics(new MicrometerMetrics(registry), new FakeClock())
            .start();
    List<Socket> busy = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      Socket socket = open();
      HttpText.send(socket, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n");
      busy.add(socket);
    }
    Await.until(WAIT, () -> listener.inFlight() == 5, "five requests being answered");

    Socket refused = open();
    String answer = HttpText.readResponse(refused.getInputStream());

    assertThat(answer).startsWith("HTTP/1.1 503 Service Unavailable\r\n");
    assertThat(answer).containsIgnoringCase("connection: close");
    assertThat(answer)
        .endsWith(
            "{\"code\":14,\"message\":\"HTTP listener has 5 connections open, all being answered"
                + " (the most allowed); retry later, or raise WEIR_HTTP_MAX_CONNECTIONS\","
                + "\"details\":[]}");
    assertThat(HttpText.closedByServer(refused)).isTrue();
    assertThat(refused(RefusalReason.HTTP_TOO_MANY_CONNECTIONS)).isEqualTo(1.0);
    release.complete(HttpAnswer.json(200, "{}"));
    for (Socket socket : busy) {
      assertThat(HttpText.readResponse(socket.getInputStream())).startsWith("HTTP/1.1 200 OK");
    }
    assertThat(get("/block").statusCode()).isEqualTo(200);
  }

  @Test
  void clientClosesMidHeadOrBody_nothingLoggedOrCounted() throws Exception {
    start(HttpSettings.defaults());
    try (Socket head = open();
        Socket body = open()) {
      HttpText.send(head, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Le");
      HttpText.send(body, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{");
      Await.until(WAIT, () -> listener.connectionsOpen() == 2, "both connections open");
    }

    Await.until(WAIT, () -> listener.connectionsOpen() == 0, "both connections closed");
    assertThat(errorsAndNettyWarnings()).isEmpty();
    assertThat(refused(RefusalReason.HTTP_MALFORMED)).isZero();
    assertThat(get("/fast").statusCode()).isEqualTo(200);
  }

  @Test
  void chunkSizeOf2To48_400AndNoErrorLogged() throws Exception {
    start(HttpSettings.defaults());
    Socket socket = open();

    HttpText.send(
        socket,
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + Long.toHexString(1L << 48)
            + "\r\nabc\r\n");
    String answer = HttpText.readResponse(socket.getInputStream());

    assertThat(answer).startsWith("HTTP/1.1 400 Bad Request\r\n");
    assertThat(answer).contains("{\"code\":3,\"message\":\"malformed HTTP request: ");
    assertThat(HttpText.closedByServer(socket)).isTrue();
    assertThat(refused(RefusalReason.HTTP_MALFORMED)).isEqualTo(1.0);
    assertThat(errorsAndNettyWarnings()).isEmpty();
    assertThat(get("/fast").statusCode()).isEqualTo(200);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "bad chunk size|POST /echo HTTP/1.1\\r"
            + "\\n"
            + "Host: x\\r"
            + "\\n"
            + "Transfer-Encoding: chunked\\r"
            + "\\n"
            + "\\r"
            + "\\n"
            + "zz\\r"
            + "\\n"
            + "|400",
        "negative chunk size|POST /echo HTTP/1.1\\r"
            + "\\n"
            + "Host: x\\r"
            + "\\n"
            + "Transfer-Encoding: chunked\\r"
            + "\\n"
            + "\\r"
            + "\\n"
            + "-5\\r"
            + "\\n"
            + "|400",
        "bad content length|POST /echo HTTP/1.1\\r"
            + "\\n"
            + "Host: x\\r"
            + "\\n"
            + "Content-Length: abc\\r"
            + "\\n"
            + "\\r"
            + "\\n"
            + "|400",
        "two content lengths|POST /echo HTTP/1.1\\r"
            + "\\n"
            + "Host: x\\r"
            + "\\n"
            + "Content-Length: 1\\r"
            + "\\n"
            + "Content-Length: 2\\r"
            + "\\n"
            + "\\r"
            + "\\n"
            + "ab|400",
        "length and chunked|POST /echo HTTP/1.1\\r"
            + "\\n"
            + "Host: x\\r"
            + "\\n"
            + "Content-Length: 3\\r"
            + "\\n"
            + "Transfer-Encoding: chunked\\r"
            + "\\n"
            + "\\r"
            + "\\n"
            + "0\\r"
            + "\\n"
            + "\\r"
            + "\\n"
            + "|400",
        "header without colon|GET /fast HTTP/1.1\\r\\nHost x\\r\\n\\r\\n|400",
        "garbage request line|\\u0001\\u0002 nonsense\\r\\n\\r\\n|400",
        "bad request target|GET fast HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n|400",
      })
  void malformedFraming_answeredWithClientErrorAndNoErrorLogged(
      String name, String request, int status) throws Exception {
    start(HttpSettings.defaults());
    Socket socket = open();

    HttpText.send(socket, unescape(request));
    String answer = HttpText.readResponse(socket.getInputStream());

    assertThat(answer).as(name).startsWith("HTTP/1.1 " + status + " ");
    assertThat(answer).as(name).contains("\"details\":[]}");
    assertThat(HttpText.closedByServer(socket)).as(name).isTrue();
    assertThat(errorsAndNettyWarnings()).as(name).isEmpty();
    assertThat(get("/fast").statusCode()).isEqualTo(200);
  }

  @Test
  void queryWithCharactersAUriMustEscape_servedAsGosServerServesIt() throws Exception {
    start(HttpSettings.defaults());
    Socket socket = open();

    HttpText.send(socket, "GET /fast?a=b|c&q={}&r=\"x\"^ HTTP/1.1\r\nHost: x\r\n\r\n");

    assertThat(HttpText.readResponse(socket.getInputStream())).startsWith("HTTP/1.1 200 OK\r\n");
    assertThat(refused(RefusalReason.HTTP_MALFORMED)).isZero();
  }

  @Test
  void pathStartingWithTwoSlashes_isAPathNotAHost_answered404OnAConnectionKeptOpen()
      throws Exception {
    start(HttpSettings.defaults());
    Socket socket = open();

    HttpText.send(
        socket,
        "GET //fast HTTP/1.1\r\nHost: x\r\n\r\n"
            + "GET //other/fast HTTP/1.1\r\nHost: x\r\n\r\n"
            + "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n");

    assertThat(HttpText.readResponse(socket.getInputStream()))
        .startsWith("HTTP/1.1 404 Not Found\r\n");
    assertThat(HttpText.readResponse(socket.getInputStream()))
        .startsWith("HTTP/1.1 404 Not Found\r\n");
    assertThat(HttpText.readResponse(socket.getInputStream())).startsWith("HTTP/1.1 200 OK\r\n");
    assertThat(refused(RefusalReason.HTTP_MALFORMED)).isZero();
  }

  @Test
  void requestLineTooLong_414() throws Exception {
    start(HttpSettings.defaults());
    Socket socket = open();

    HttpText.send(socket, "GET /" + "a".repeat(20_000) + " HTTP/1.1\r\nHost: x\r\n\r\n");

    assertThat(HttpText.readResponse(socket.getInputStream()))
        .startsWith("HTTP/1.1 414 Request-URI Too Long\r\n")
        .endsWith("{\"code\":8,\"message\":\"request line is too long\",\"details\":[]}");
    assertThat(errorsAndNettyWarnings()).isEmpty();
  }

  @Test
  void headerFieldsTooLarge_431() throws Exception {
    start(HttpSettings.defaults());
    Socket socket = open();

    HttpText.send(
        socket, "GET /fast HTTP/1.1\r\nHost: x\r\nX-Big: " + "b".repeat(40_000) + "\r\n\r\n");

    assertThat(HttpText.readResponse(socket.getInputStream()))
        .startsWith("HTTP/1.1 431 Request Header Fields Too Large\r\n")
        .endsWith(
            "{\"code\":8,\"message\":\"request header fields are too large\",\"details\":[]}");
    assertThat(errorsAndNettyWarnings()).isEmpty();
  }

  private static String unescape(String text) {
    return text.replace("\\r", "\r")
        .replace("\\n", "\n")
        .replace("\\u0001", "\u0001")
        .replace("\\u0002", "\u0002");
  }
}
