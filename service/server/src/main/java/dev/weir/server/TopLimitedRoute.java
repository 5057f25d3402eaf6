package dev.weir.server;

import dev.weir.core.cluster.ClusterNode;
import dev.weir.core.toplimited.LimitedKey;
import dev.weir.core.toplimited.TopLimited;
import dev.weir.core.toplimited.TopLimitedEntry;
import dev.weir.core.toplimited.TopLimitedView;
import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpCall;
import dev.weir.http.HttpRoute;
import dev.weir.http.QueryParameters;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/**
 * {@code GET /v1/TopLimited}: the keys this node (or, with {@code ?scope=cluster}, every member)
 * answered over their limit most often in the last {@value TopLimitedSettings#WINDOW_MINUTES}
 * minutes, highest first, as JSON; {@code ?limit=} caps how many. A bad query parameter is 400
 * naming it, its value and what is allowed; with {@code WEIR_TOP_LIMITED=false} the route answers
 * 404 saying how to turn it on.
 */
final class TopLimitedRoute {

  /** The route's path. */
  static final String PATH = "/v1/TopLimited";

  /** How many keys an answer lists without {@code limit}. */
  static final int DEFAULT_LIMIT = 20;

  /** The most keys an answer lists. */
  static final int MAX_LIMIT = 1000;

  /** How long a cluster-wide answer waits for each peer. */
  static final Duration PEER_TIMEOUT = Duration.ofSeconds(2);

  /** The message of the 404 when the view is off. */
  static final String OFF =
      "GET /v1/TopLimited is off on this node: set WEIR_TOP_LIMITED=true to serve it";

  private static final int INVALID_ARGUMENT = Status.Code.INVALID_ARGUMENT.value();

  private final TopLimited topLimited;
  private final ClusterNode cluster;
  private final TopLimitedSettings settings;

  /**
   * Creates the route reading {@code topLimited} (null when the view is off) and asking {@code
   * cluster}'s peers for theirs, showing keys as {@code settings} say.
   */
  TopLimitedRoute(TopLimited topLimited, ClusterNode cluster, TopLimitedSettings settings) {
    this.topLimited = topLimited;
    this.cluster = cluster;
    this.settings = settings;
  }

  /** Returns the route to mount. */
  HttpRoute route() {
    return HttpRoute.get(PATH, this::answer);
  }

  /** What a valid query asks for. */
  private record Query(int limit, boolean cluster) {}

  private CompletionStage<HttpAnswer> answer(HttpCall call) {
    if (topLimited == null) {
      return HttpAnswer.error(404, Status.Code.NOT_FOUND.value(), OFF).completed();
    }
    Query query;
    try {
      query = parse(call.query());
    } catch (IllegalArgumentException e) {
      return HttpAnswer.error(400, INVALID_ARGUMENT, e.getMessage()).completed();
    }
    TopLimitedView local = topLimited.view();
    if (!query.cluster()) {
      return fresh(json(local.first(query.limit()), "node", Map.of())).completed();
    }
    Map<String, CompletableFuture<TopLimitedView>> asked =
        cluster.askPeersTopLimited(settings.counters(), PEER_TIMEOUT);
    return CompletableFuture.allOf(asked.values().toArray(CompletableFuture[]::new))
        .handle(
            (done, failure) -> {
              List<TopLimitedView> views = new ArrayList<>();
              views.add(local.first(settings.counters()));
              Map<String, String> unreachable = new LinkedHashMap<>();
              asked.forEach(
                  (peer, answer) -> {
                    try {
                      views.add(answer.join());
                    } catch (CompletionException e) {
                      Throwable cause = e.getCause() != null ? e.getCause() : e;
                      unreachable.put(peer, String.valueOf(cause.getMessage()));
                    }
                  });
              TopLimitedView merged = TopLimitedView.merge(views).first(query.limit());
              return fresh(json(merged, "cluster", unreachable));
            });
  }

  /**
   * Returns the 200 answer of {@code json}, which no cache may store: it changes every minute and
   * names clients' key values.
   */
  private static HttpAnswer fresh(String json) {
    return HttpAnswer.json(200, json).noStore();
  }

  /**
   * Returns what {@code rawQuery} asks for.
   *
   * @throws IllegalArgumentException naming the parameter, its value and what is allowed
   */
  static Query parse(String rawQuery) {
    Map<String, List<String>> params;
    try {
      params = QueryParameters.parse(rawQuery);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "query string '" + rawQuery + "' is not valid percent-encoding: " + e.getMessage());
    }
    int limit = DEFAULT_LIMIT;
    boolean wholeCluster = false;
    for (Map.Entry<String, List<String>> p : params.entrySet()) {
      String name = p.getKey();
      if (p.getValue().size() > 1) {
        throw new IllegalArgumentException(
            "query parameter '"
                + name
                + "' is given "
                + p.getValue().size()
                + " times; give it once");
      }
      String value = p.getValue().get(0);
      switch (name) {
        case "limit" -> limit = limit(value);
        case "scope" -> {
          if (!value.equals("node") && !value.equals("cluster")) {
            throw new IllegalArgumentException(
                "query parameter 'scope' is '" + value + "'; allowed: node, cluster");
          }
          wholeCluster = value.equals("cluster");
        }
        default ->
            throw new IllegalArgumentException(
                "unknown query parameter '" + name + "'; allowed: limit, scope");
      }
    }
    return new Query(limit, wholeCluster);
  }

  private static int limit(String value) {
    String allowed = "a whole number from 1 to " + MAX_LIMIT;
    int limit;
    try {
      limit = Integer.parseInt(value);
    } catch (NumberFormatException e) {
      limit = -1;
    }
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new IllegalArgumentException(
          "query parameter 'limit' is '" + value + "'; allowed: " + allowed);
    }
    return limit;
  }

  private String json(TopLimitedView view, String scope, Map<String, String> unreachable) {
    StringBuilder out = new StringBuilder(256 + 160 * view.entries().size());
    out.append("{\"scope\":\"").append(scope).append('"');
    out.append(",\"window_seconds\":").append(TopLimitedSettings.WINDOW_MINUTES * 60);
    out.append(",\"counters\":").append(settings.counters());
    out.append(",\"over_limit_total\":").append(view.total());
    out.append(",\"skipped_here\":").append(topLimited.window().skipped());
    out.append(",\"hashed\":").append(settings.hashKeys());
    out.append(",\"keys\":[");
    for (int i = 0; i < view.entries().size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      entry(out, view.entries().get(i));
    }
    out.append(']');
    if (!unreachable.isEmpty() || scope.equals("cluster")) {
      out.append(",\"unreachable\":[");
      boolean first = true;
      for (Map.Entry<String, String> u : unreachable.entrySet()) {
        out.append(first ? "" : ",")
            .append("{\"peer\":")
            .append(HttpAnswer.jsonString(u.getKey()))
            .append(",\"error\":")
            .append(HttpAnswer.jsonString(u.getValue()))
            .append('}');
        first = false;
      }
      out.append(']');
    }
    return out.append('}').toString();
  }

  private void entry(StringBuilder out, TopLimitedEntry e) {
    LimitedKey key = e.key();
    out.append("{\"source\":").append(HttpAnswer.jsonString(key.source()));
    out.append(",\"domain\":").append(HttpAnswer.jsonString(key.domain()));
    out.append(",\"rule\":").append(HttpAnswer.jsonString(key.rule()));
    out.append(",\"key\":[");
    List<String> entries = key.entries();
    for (int i = 0; i < entries.size(); i += 2) {
      out.append(i > 0 ? "," : "")
          .append("{\"key\":")
          .append(HttpAnswer.jsonString(entries.get(i)))
          .append(",\"value\":")
          .append(HttpAnswer.jsonString(shown(entries.get(i + 1))))
          .append('}');
    }
    out.append("],\"over_limit\":").append(e.overLimit());
    out.append(",\"hits\":").append(e.hits());
    out.append(",\"error\":").append(e.error());
    out.append('}');
  }

  private String shown(String value) {
    return settings.hashKeys() ? hashed(value) : value;
  }

  /** Returns {@code sha256:} and the first 16 hex digits of the SHA-256 of {@code value}. */
  static String hashed(String value) {
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256").digest(value.getBytes(StandardCharsets.UTF_8));
      return "sha256:" + HexFormat.of().formatHex(digest, 0, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM has SHA-256", e);
    }
  }
}
