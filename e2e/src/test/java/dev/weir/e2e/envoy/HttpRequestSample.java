package dev.weir.e2e.envoy;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * An HTTP request as Envoy's rate-limit filter sees it: method, path, headers (names lower-cased,
 * as Envoy stores them) and the downstream address the {@code remote_address} action reports.
 */
public record HttpRequestSample(
    String method, String path, Map<String, String> headers, String remoteAddress) {

  /** The client address used when a sample does not name one. */
  public static final String DEFAULT_CLIENT = "198.51.100.7";

  /** Creates a sample, copying the headers and lower-casing their names. */
  public HttpRequestSample {
    Map<String, String> lowerCased = new LinkedHashMap<>();
    headers.forEach((name, value) -> lowerCased.put(name.toLowerCase(Locale.ROOT), value));
    headers = Map.copyOf(lowerCased);
  }

  /** Returns a GET of {@code path} from {@link #DEFAULT_CLIENT} with no headers. */
  public static HttpRequestSample get(String path) {
    return new HttpRequestSample("GET", path, Map.of(), DEFAULT_CLIENT);
  }

  /** Returns this request with one more header. */
  public HttpRequestSample header(String name, String value) {
    Map<String, String> more = new LinkedHashMap<>(headers);
    more.put(name.toLowerCase(Locale.ROOT), value);
    return new HttpRequestSample(method, path, more, remoteAddress);
  }

  /** Returns this request sent from {@code address}. */
  public HttpRequestSample from(String address) {
    return new HttpRequestSample(method, path, headers, address);
  }

  /**
   * Returns the value of a header or pseudo-header ({@code :method}, {@code :path}), or null when
   * absent.
   */
  public String headerValue(String name) {
    return switch (name.toLowerCase(Locale.ROOT)) {
      case ":method" -> method;
      case ":path" -> path;
      case ":authority", "host" -> headers.getOrDefault("host", headers.get(":authority"));
      default -> headers.get(name.toLowerCase(Locale.ROOT));
    };
  }

  /** Returns the path without its query string. */
  public String pathWithoutQuery() {
    int query = path.indexOf('?');
    return query < 0 ? path : path.substring(0, query);
  }

  @Override
  public String toString() {
    StringBuilder text = new StringBuilder(method).append(' ').append(path);
    headers.forEach(
        (name, value) -> text.append(" ").append(name).append(": ").append(value).append(';'));
    return text.append(" from ").append(remoteAddress).toString();
  }
}
