package dev.weir.http;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The routes of one listener by exact path, then by method. */
final class RouteTable {

  private final Map<String, Map<String, HttpRoute>> byPath = new HashMap<>();

  /** Indexes {@code routes}; two routes with the same method and path are an error. */
  RouteTable(List<HttpRoute> routes) {
    for (HttpRoute route : routes) {
      HttpRoute previous =
          byPath.computeIfAbsent(route.path(), p -> new TreeMap<>()).put(route.method(), route);
      if (previous != null) {
        throw new IllegalArgumentException(
            "duplicate route " + route.method() + " " + route.path());
      }
    }
  }

  /** Returns the routes of {@code path} by method, or null when no route has that path. */
  Map<String, HttpRoute> methods(String path) {
    return byPath.get(path);
  }

  /** Returns the route of {@code method} and {@code path}, or null. */
  HttpRoute find(String method, String path) {
    Map<String, HttpRoute> methods = byPath.get(path);
    return methods == null ? null : methods.get(method);
  }
}
