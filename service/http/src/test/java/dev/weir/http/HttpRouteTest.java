package dev.weir.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class HttpRouteTest {

  private static final HttpHandler NOTHING = call -> HttpAnswer.json(200, "{}").completed();

  @Test
  void probe_get_servedWhenSaturated() {
    HttpRoute probe = HttpRoute.probe("/v1/LiveCheck", NOTHING);

    assertThat(probe.method()).isEqualTo("GET");
    assertThat(probe.servedWhenSaturated()).isTrue();
    assertThat(HttpRoute.get("/x", NOTHING).servedWhenSaturated()).isFalse();
    assertThat(HttpRoute.post("/x", NOTHING).servedWhenSaturated()).isFalse();
  }

  @Test
  void constructor_lowerCaseMethod_upperCased() {
    assertThat(new HttpRoute("post", "/p", NOTHING, false).method()).isEqualTo("POST");
  }

  @Test
  void constructor_relativePath_rejected() {
    assertThatThrownBy(() -> HttpRoute.get("p", NOTHING))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("path must start with '/': p");
  }

  @Test
  void answer_withHeader_keepsTheRest() {
    HttpAnswer answer = HttpAnswer.error(405, 12, "Method Not Allowed").withHeader("Allow", "GET");

    assertThat(answer.status()).isEqualTo(405);
    assertThat(answer.contentType()).isEqualTo("application/json");
    assertThat(answer.headers()).containsEntry("Allow", "GET");
    assertThat(answer.text())
        .isEqualTo("{\"code\":12,\"message\":\"Method Not Allowed\",\"details\":[]}");
  }
}
