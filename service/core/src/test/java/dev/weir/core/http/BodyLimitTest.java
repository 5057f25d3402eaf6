package dev.weir.core.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.RecordingMetrics;
import java.io.ByteArrayInputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class BodyLimitTest {

  private final RecordingMetrics metrics = new RecordingMetrics();
  private final HttpClient client = HttpClient.newHttpClient();
  private HttpListener listener;

  @BeforeEach
  void start() throws Exception {
    HttpRoute echoLength =
        HttpRoute.post(
            "/echo",
            exchange -> {
              byte[] body = exchange.getRequestBody().readAllBytes();
              HttpResponses.send(
                  exchange,
                  200,
                  "text/plain",
                  Integer.toString(body.length).getBytes(StandardCharsets.UTF_8));
            });
    listener =
        HttpListener.start(
            new InetSocketAddress("127.0.0.1", 0),
            BodyLimit.apply(List.of(echoLength), 100, metrics));
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
    assertThat(metrics.events()).isEmpty();
  }

  @Test
  void post_declaredLengthOverLimit_413NamingLimitAndCounted() throws Exception {
    HttpResponse<String> response = post(BodyPublishers.ofByteArray(new byte[101]));

    assertThat(response.statusCode()).isEqualTo(413);
    assertThat(response.body())
        .isEqualTo(
            "{\"code\":8,\"message\":\"request body is larger than the 100 bytes allowed"
                + " (WEIR_HTTP_MAX_BODY_SIZE)\",\"details\":[]}");
    assertThat(metrics.events()).containsExactly("refused http_body_too_large");
  }

  @Test
  void post_chunkedBodyOverLimit_413() throws Exception {
    HttpResponse<String> response =
        post(BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(new byte[5000])));

    assertThat(response.statusCode()).isEqualTo(413);
    assertThat(metrics.events()).containsExactly("refused http_body_too_large");
  }
}
