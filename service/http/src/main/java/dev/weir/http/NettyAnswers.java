package dev.weir.http;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** Turns {@link HttpAnswer}s into Netty responses, or into raw bytes for a refused connection. */
final class NettyAnswers {

  private NettyAnswers() {}

  /**
   * Returns {@code answer} as an HTTP/1.1 response with {@code Content-Length}, and {@code
   * Connection: close} unless {@code keepAlive}.
   */
  static FullHttpResponse response(HttpAnswer answer, boolean keepAlive) {
    return response(answer, keepAlive, false);
  }

  /**
   * Returns {@code answer} as an HTTP/1.1 response with {@code Content-Length}; with {@code
   * Connection: close} unless {@code keepAlive}, and with {@code Connection: keep-alive} when
   * {@code keepAlive} and {@code http10}, since an HTTP/1.0 client takes a connection whose answer
   * does not say so as closing and waits for the close.
   */
  static FullHttpResponse response(HttpAnswer answer, boolean keepAlive, boolean http10) {
    FullHttpResponse response =
        new DefaultFullHttpResponse(
            HttpVersion.HTTP_1_1,
            HttpResponseStatus.valueOf(answer.status()),
            Unpooled.wrappedBuffer(answer.body()));
    response.headers().set(HttpHeaderNames.CONTENT_TYPE, answer.contentType());
    response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, answer.body().length);
    for (Map.Entry<String, String> header : answer.headers().entrySet()) {
      response.headers().set(header.getKey(), header.getValue());
    }
    if (!keepAlive) {
      response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    } else if (http10) {
      response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
    }
    return response;
  }

  /**
   * Returns {@code answer} encoded as the bytes of an HTTP/1.1 response that closes the connection,
   * for a connection refused before any request was read.
   */
  static ByteBuf rawClosing(HttpAnswer answer) {
    String head =
        "HTTP/1.1 "
            + HttpResponseStatus.valueOf(answer.status())
            + "\r\nContent-Type: "
            + answer.contentType()
            + "\r\nContent-Length: "
            + answer.body().length
            + "\r\nConnection: close\r\n\r\n";
    return Unpooled.wrappedBuffer(head.getBytes(StandardCharsets.US_ASCII), answer.body());
  }
}
