package dev.weir.server;

import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpRoute;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The status page, {@code GET /ui/}: one HTML page with its script and style sheet, read from the
 * jar's {@code dev/weir/server/ui/} at start, that shows what {@link StatusRoute} reports every 2
 * seconds, the top limited keys where {@code GET /v1/TopLimited} exists, and a form that asks
 * {@link ExplainRoute}. It loads nothing from elsewhere (its Content-Security-Policy allows only
 * this node) and is served on the HTTP listener, so whoever may read {@code /metrics} may read it.
 */
final class StatusPage {

  /** The page's path. */
  static final String PATH = "/ui/";

  private static final String FOLDER = "ui/";
  private static final String POLICY =
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self';"
          + " img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

  private StatusPage() {}

  /**
   * Where {@code GET /ui} sends the browser: relative to {@code /ui}, so that behind a reverse proxy
   * serving the node under a path prefix ({@code /weir/ui}) it stays under that prefix ({@code
   * /weir/ui/}), as the page's own relative URLs do.
   */
  static final String REDIRECT = "ui/";

  /** Returns the routes of the page, its assets and {@code GET /ui} (redirected to the page). */
  static List<HttpRoute> routes() {
    List<HttpRoute> routes = new ArrayList<>();
    routes.add(asset(PATH, "index.html", "text/html; charset=utf-8"));
    routes.add(asset(PATH + "status.js", "status.js", "text/javascript; charset=utf-8"));
    routes.add(asset(PATH + "status.css", "status.css", "text/css; charset=utf-8"));
    HttpAnswer redirect =
        HttpAnswer.of(308, "text/plain; charset=utf-8", REDIRECT.getBytes(StandardCharsets.UTF_8))
            .withHeader("Location", REDIRECT);
    routes.add(HttpRoute.get("/ui", call -> redirect.completed()));
    return routes;
  }

  private static HttpRoute asset(String path, String file, String contentType) {
    HttpAnswer answer =
        HttpAnswer.of(200, contentType, read(file))
            .withHeader("Cache-Control", "no-cache")
            .withHeader("X-Content-Type-Options", "nosniff")
            .withHeader("Content-Security-Policy", POLICY);
    return HttpRoute.get(path, call -> answer.completed());
  }

  private static byte[] read(String file) {
    try (InputStream in = StatusPage.class.getResourceAsStream(FOLDER + file)) {
      if (in == null) {
        throw new IllegalStateException("the jar lacks " + FOLDER + file + " of the status page");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
