package dev.weir.http;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The parameters of a URL query string ({@code a=1&b=x%20y}), decoded as HTML forms encode them.
 */
public final class QueryParameters {

  private QueryParameters() {}

  /**
   * Returns the parameters of the raw query string {@code query} by name, in order, each with its
   * values in order; a name without {@code =} has the value {@code ""}.
   *
   * @throws IllegalArgumentException when a name or value is not valid percent-encoding
   */
  public static Map<String, List<String>> parse(String query) {
    Map<String, List<String>> out = new LinkedHashMap<>();
    if (query.isEmpty()) {
      return out;
    }
    for (String pair : query.split("&", -1)) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name = decode(eq < 0 ? pair : pair.substring(0, eq));
      String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
      out.computeIfAbsent(name, n -> new ArrayList<>()).add(value);
    }
    return out;
  }

  private static String decode(String text) {
    return URLDecoder.decode(text, StandardCharsets.UTF_8);
  }
}
