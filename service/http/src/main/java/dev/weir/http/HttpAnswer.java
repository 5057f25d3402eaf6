package dev.weir.http;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * One HTTP answer: status, content type, body and any further headers. Errors take grpc-gateway's
 * shape, {@code {"code":<gRPC code>,"message":"...","details":[]}}.
 *
 * @param status the HTTP status code
 * @param contentType the {@code Content-Type} header
 * @param body the body, possibly empty
 * @param headers further headers by name, e.g. {@code Allow}
 */
public record HttpAnswer(int status, String contentType, byte[] body, Map<String, String> headers) {

  /** The content type of every JSON answer. */
  public static final String JSON = "application/json";

  /** Checks the parts and copies the headers. */
  public HttpAnswer {
    if (status < 100 || status > 999) {
      throw new IllegalArgumentException("status is " + status + "; it must be from 100 to 999");
    }
    Objects.requireNonNull(contentType, "contentType");
    Objects.requireNonNull(body, "body");
    headers = Map.copyOf(headers);
  }

  /** Returns an answer with {@code status}, {@code contentType} and {@code body}. */
  public static HttpAnswer of(int status, String contentType, byte[] body) {
    return new HttpAnswer(status, contentType, body, Map.of());
  }

  /** Returns the JSON text {@code json} with {@code status}. */
  public static HttpAnswer json(int status, String json) {
    return of(status, JSON, json.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Returns a grpc-gateway error with HTTP {@code status}, gRPC {@code code} and {@code message}.
   */
  public static HttpAnswer error(int status, int code, String message) {
    return json(status, errorBody(code, message));
  }

  /** Returns this answer, already complete, as the stage a handler returns. */
  public CompletableFuture<HttpAnswer> completed() {
    return CompletableFuture.completedFuture(this);
  }

  /** Returns this answer with header {@code name} set to {@code value}. */
  public HttpAnswer withHeader(String name, String value) {
    Map<String, String> more = new LinkedHashMap<>(headers);
    more.put(name, value);
    return new HttpAnswer(status, contentType, body, more);
  }

  /**
   * Returns this answer with {@code Cache-Control: no-store}, which no cache (a browser's, a
   * reverse proxy's) may keep: for answers that are a view of the moment or carry clients' keys.
   */
  public HttpAnswer noStore() {
    return withHeader("Cache-Control", "no-store");
  }

  /** Returns the body as UTF-8 text. */
  public String text() {
    return new String(body, StandardCharsets.UTF_8);
  }

  /** Returns the grpc-gateway error body for gRPC {@code code} and {@code message}. */
  public static String errorBody(int code, String message) {
    return "{\"code\":" + code + ",\"message\":" + jsonString(message) + ",\"details\":[]}";
  }

  /** Returns {@code text} as a JSON string literal. */
  public static String jsonString(String text) {
    StringBuilder out = new StringBuilder(text.length() + 2).append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append('"').toString();
  }
}
