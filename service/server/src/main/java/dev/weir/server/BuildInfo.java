package dev.weir.server;

import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpRoute;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * What this build of Weir is: its version, the Maven project version written into {@code
 * build.properties} when the server module is built. A running node shows it at {@code GET
 * /version} and as the {@code weir_build_info} gauge.
 */
final class BuildInfo {

  /** The version reported when the build left no {@code build.properties}. */
  static final String UNKNOWN = "unknown";

  private static final String VERSION = load();

  private BuildInfo() {}

  /** Returns the version of this build, for example {@code 0.1.0-SNAPSHOT}. */
  static String version() {
    return VERSION;
  }

  /** Returns {@code GET /version}, answering {@code {"version":"..."}}. */
  static HttpRoute route() {
    String body = "{\"version\":" + HttpAnswer.jsonString(VERSION) + "}";
    return HttpRoute.get("/version", call -> HttpAnswer.json(200, body).completed());
  }

  /** Registers {@code weir_build_info{version="..."}}, always 1, in {@code registry}. */
  static void register(MeterRegistry registry) {
    Gauge.builder("weir.build.info", () -> 1)
        .description("Always 1; the version label names this build of Weir")
        .tag("version", VERSION)
        .register(registry);
  }

  private static String load() {
    try (InputStream in = BuildInfo.class.getResourceAsStream("build.properties")) {
      if (in == null) {
        return UNKNOWN;
      }
      Properties properties = new Properties();
      properties.load(in);
      String version = properties.getProperty("version", UNKNOWN);
      return version.isBlank() || version.startsWith("${") ? UNKNOWN : version;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read build.properties", e);
    }
  }
}
