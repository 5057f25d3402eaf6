package dev.weir.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.RecordingMetrics;
import java.io.ByteArrayInputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse.BodyHandlers;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class HttpBodyLimitTest {

  private static final String TOO_LARGE =
      "{\"code\":8,\"message\":\"request body is larger than the 100 bytes allowed"
          + " (WEIR_HTTP_MAX_BODY_SIZE)\",\"details\":[]}";

  private final RecordingMetrics metrics = new RecordingMetrics();
  private final HttpClient client = HttpClient.newHttpClient();
  private HttpListener listener;

  @BeforeEach
  void start() throws Exception {
    HttpRoute echoLength =
        HttpRoute.post(
            "/echo",
            call ->
                HttpAnswer.of(200, "text/plain", Integer.toString(call.body().length).getBytes())
                    .completed());
    listener =
        HttpListener.builder(new InetSocketAddress("127.0.0.1", 0))
            .routes(List.of(echoLength))
            .settings(HttpSettings.defaults().withMaxBodyBytes(100))
            .metrics(metrics, new FakeClock())
            .start();
  }

  @AfterEach
  void stop() {
    listener.stop(Duration.ZERO);
  }

  private HttpResponse<String> post(HttpRequest.BodyPublisher body) throws Exception {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + listener.port() + "/echo"))
            .POST(body)
            .build();
    return client.send(request, BodyHandlers.ofString());
  }

  @Test
  void post_bodyAtLimit_handlerReadsWholeBody() throws Exception {
    HttpResponse<String> response = post(BodyPublishers.ofByteArray(new byte[100]));

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body()).isEqualTo("100");
    assertThat(metrics.events()).containsExactly("http /echo 200 0");
  }

  @Test
  void post_declaredLengthOverLimit_413NamingLimitAndCounted() throws Exception {
    HttpResponse<String> response = post(BodyPublishers.ofByteArray(new byte[101]));

    assertThat(response.statusCode()).isEqualTo(413);
    assertThat(response.headers().firstValue("content-type")).contains("application/json");
    assertThat(response.body()).isEqualTo(TOO_LARGE);
    assertThat(metrics.events()).containsExactly("refused http_body_too_large", "http /echo 413 0");
  }

  @Test
  void post_chunkedBodyOverLimit_413() throws Exception {
    HttpResponse<String> response =
        post(BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(new byte[5000])));

    assertThat(response.statusCode()).isEqualTo(413);
    assertThat(response.body()).isEqualTo(TOO_LARGE);
    assertThat(metrics.events()).containsExactly("refused http_body_too_large", "http /echo 413 0");
  }

  @Test
  void post_expectContinueOverLimit_413BeforeTheBodyIsSent() throws Exception {
    try (Socket socket = HttpText.connect(listener.port())) {
      HttpText.send(
          socket,
          "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n");

      String answer = HttpText.readResponse(socket.getInputStream());

      assertThat(answer)
          .startsWith("HTTP/1.1 413 Request Entity Too Large\r\n")
          .endsWith(TOO_LARGE);
      assertThat(HttpText.closedByServer(socket)).isTrue();
    }
  }
}
