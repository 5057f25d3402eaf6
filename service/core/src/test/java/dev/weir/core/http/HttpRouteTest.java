package dev.weir.core.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpHandler;
import dev.weir.core.metrics.HttpMetrics;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.testkit.FakeClock;
import java.util.List;
import org.junit.jupiter.api.Test;

class HttpRouteTest {

  private static final HttpHandler NOTHING = exchange -> {};

  @Test
  void probe_get_servedWhenSaturated() {
    HttpRoute probe = HttpRoute.probe("/v1/LiveCheck", NOTHING);

    assertThat(probe.method()).isEqualTo("GET");
    assertThat(probe.servedWhenSaturated()).isTrue();
    assertThat(HttpRoute.get("/x", NOTHING).servedWhenSaturated()).isFalse();
    assertThat(HttpRoute.post("/x", NOTHING).servedWhenSaturated()).isFalse();
  }

  @Test
  void withHandler_probe_keepsMethodPathAndFlag() {
    HttpHandler other = exchange -> {};

    HttpRoute replaced = HttpRoute.probe("/p", NOTHING).withHandler(other);

    assertThat(replaced).isEqualTo(new HttpRoute("GET", "/p", other, true));
  }

  @Test
  void wrappers_probeRoutes_stayServedWhenSaturated() {
    List<HttpRoute> routes =
        List.of(HttpRoute.probe("/p", NOTHING), HttpRoute.post("/q", NOTHING));

    List<HttpRoute> wrapped =
        HttpMetrics.instrument(
            BodyLimit.apply(routes, 10, WeirMetrics.NOOP), WeirMetrics.NOOP, new FakeClock());

    assertThat(wrapped).extracting(HttpRoute::servedWhenSaturated).containsExactly(true, false);
  }
}
