package dev.weir.core.http;

import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Writes HTTP answers, including errors in grpc-gateway's shape: {@code {"code":<gRPC
 * code>,"message":"...","details":[]}}.
 */
public final class HttpResponses {

  /** The content type of every JSON answer. */
  public static final String JSON = "application/json";

  private HttpResponses() {}

  /** Sends {@code body} with {@code status} and {@code contentType}, then closes the exchange. */
  public static void send(HttpExchange exchange, int status, String contentType, byte[] body)
      throws IOException {
    try (exchange) {
      exchange.getResponseHeaders().set("Content-Type", contentType);
      exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
      if (body.length > 0) {
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(body);
        }
      }
    }
  }

  /** Sends the JSON text {@code json} with {@code status}. */
  public static void sendJson(HttpExchange exchange, int status, String json) throws IOException {
    send(exchange, status, JSON, json.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Sends a grpc-gateway error body with HTTP {@code status}, gRPC {@code code} and {@code
   * message}.
   */
  public static void sendError(HttpExchange exchange, int status, int code, String message)
      throws IOException {
    sendJson(exchange, status, errorBody(code, message));
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
