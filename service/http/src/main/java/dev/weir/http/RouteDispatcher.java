package dev.weir.http;

import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.time.Clock;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.PrematureChannelClosureException;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last handler of a connection: answers each whole request from its {@link HttpRoute}, one at a
 * time and in order. It refuses malformed requests (400, 414 or 431, then closes), answers an
 * unknown path 404 and a known path with another method 405 with {@code Allow}, admits a request
 * only while the listener is not saturated or draining (else 503), and runs the route's handler on
 * the connection's event loop, writing its answer when the handler's stage completes. A handler
 * that throws or fails is answered 500. Every answer from a route, and every 413, is recorded by
 * route and status. A {@link BodyLimit.Refusal} or {@link BodyLimit#CONTINUE} takes its turn among
 * the requests: it is written after the answers to the requests before it.
 */
final class RouteDispatcher extends SimpleChannelInboundHandler<FullHttpRequest> {

  private static final Logger LOG = LoggerFactory.getLogger(RouteDispatcher.class);
  private static final RateLimitedLogger WARNINGS = RateLimitedLogger.of(RouteDispatcher.class);

  private static final int INVALID_ARGUMENT = 3;
  private static final int NOT_FOUND = 5;
  private static final int RESOURCE_EXHAUSTED = 8;
  private static final int UNIMPLEMENTED = 12;
  private static final int INTERNAL = 13;
  private static final int UNAVAILABLE = 14;

  /** What a route's handler is asked, and when. */
  private record Request(
      String method,
      String uri,
      boolean keepAlive,
      boolean http10,
      DecoderResult result,
      byte[] body,
      Map<String, String> traceContext) {}

  private final RouteTable routes;
  private final InFlight inFlight;
  private final RequestDeadlines deadlines;
  private final WeirMetrics metrics;
  private final Clock clock;
  private final HttpAnswer saturated;
  // Requests, refusals and 100 Continues to send after the answer being made.
  private final Queue<Object> waiting = new ArrayDeque<>();
  private boolean answering;
  private boolean http10;

  /** Creates the dispatcher of one connection. */
  RouteDispatcher(
      RouteTable routes,
      InFlight inFlight,
      RequestDeadlines deadlines,
      WeirMetrics metrics,
      Clock clock,
      HttpAnswer saturated) {
    this.routes = routes;
    this.inFlight = inFlight;
    this.deadlines = deadlines;
    this.metrics = metrics;
    this.clock = clock;
    this.saturated = saturated;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
    if (msg instanceof BodyLimit.Refusal || msg instanceof BodyLimit.Continue) {
      take(ctx, msg);
      return;
    }
    super.channelRead(ctx, msg);
  }

  @Override
  protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest message) {
    Request request =
        new Request(
            message.method().name(),
            message.uri(),
            HttpUtil.isKeepAlive(message),
            !message.protocolVersion().isKeepAliveDefault(),
            message.decoderResult(),
            ByteBufUtil.getBytes(message.content()),
            traceContext(message.headers()));
    take(ctx, request);
  }

  // Serves a request or refusal, or sends a 100 Continue, now or after the answer being made.
  private void take(ChannelHandlerContext ctx, Object item) {
    if (answering) {
      waiting.add(item);
    } else if (item instanceof BodyLimit.Continue) {
      writeContinue(ctx);
    } else {
      serve(ctx, item);
    }
  }

  private void writeContinue(ChannelHandlerContext ctx) {
    ctx.writeAndFlush(
        new DefaultFullHttpResponse(
            HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE, Unpooled.EMPTY_BUFFER));
  }

  private void serve(ChannelHandlerContext ctx, Object item) {
    if (!ctx.channel().isActive()) {
      return;
    }
    answering = true;
    deadlines.answering();
    ctx.channel().config().setAutoRead(false);
    if (item instanceof BodyLimit.Refusal refusal) {
      http10 = refusal.http10();
      write(ctx, refusal.answer(), false, null);
      return;
    }
    Request request = (Request) item;
    http10 = request.http10();
    if (request.result().isFailure()) {
      metrics.refused(RefusalReason.HTTP_MALFORMED);
      write(ctx, malformed(request.result().cause()), false, null);
      return;
    }
    String path = pathOf(request.uri());
    if (path == null) {
      metrics.refused(RefusalReason.HTTP_MALFORMED);
      write(
          ctx,
          HttpAnswer.error(400, INVALID_ARGUMENT, "malformed HTTP request: bad request target"),
          false,
          null);
      return;
    }
    HttpRoute route = routes.find(request.method(), path);
    long start = clock.monotonicNanos();
    switch (inFlight.enter(route != null && route.servedWhenSaturated())) {
      case SATURATED -> {
        metrics.refused(RefusalReason.HTTP_SATURATED);
        refuse(ctx, route, saturated, start);
        return;
      }
      case DRAINING -> {
        refuse(
            ctx, route, HttpAnswer.error(503, UNAVAILABLE, "server is shutting down"), start);
        return;
      }
      case ADMITTED -> {}
    }
    Runnable exit = inFlight::exit;
    if (route == null) {
      write(ctx, unrouted(path), request.keepAlive(), exit);
      return;
    }
    CompletionStage<HttpAnswer> stage;
    try {
      stage =
          route
              .handler()
              .handle(
                  new HttpCall(
                      request.method(),
                      path,
                      request.body(),
                      queryOf(request.uri()),
                      request.traceContext()));
    } catch (RuntimeException e) {
      stage = CompletableFuture.failedFuture(e);
    }
    if (stage == null) {
      stage = CompletableFuture.failedFuture(new NullPointerException("handler returned null"));
    }
    stage.whenComplete(
        (answer, failure) -> {
          HttpAnswer result =
              failure != null
                  ? internalError(path, failure)
                  : answer != null
                      ? answer
                      : internalError(path, new NullPointerException("handler answered null"));
          record(route, result, start);
          if (ctx.executor().inEventLoop()) {
            write(ctx, result, request.keepAlive(), exit);
          } else {
            ctx.executor().execute(() -> write(ctx, result, request.keepAlive(), exit));
          }
        });
  }

  // A request the listener does not serve (saturated, draining): counted if its route is known.
  private void refuse(ChannelHandlerContext ctx, HttpRoute route, HttpAnswer answer, long start) {
    if (route != null) {
      record(route, answer, start);
    }
    write(ctx, answer, false, null);
  }

  // Counted before the answer leaves, so a client that reads it finds it counted; a meter that
  // fails is logged, not allowed to keep the answer back.
  private void record(HttpRoute route, HttpAnswer result, long start) {
    try {
      metrics.httpRequest(route.path(), result.status(), clock.monotonicNanos() - start);
    } catch (RuntimeException e) {
      WARNINGS.warn("meter", "counting an HTTP answer of {} failed", route.path(), e);
    }
  }

  private HttpAnswer unrouted(String path) {
    Map<String, HttpRoute> methods = routes.methods(path);
    if (methods == null) {
      return HttpAnswer.error(404, NOT_FOUND, "Not Found");
    }
    return HttpAnswer.error(405, UNIMPLEMENTED, "Method Not Allowed")
        .withHeader("Allow", String.join(", ", methods.keySet()));
  }

  private static HttpAnswer internalError(String path, Throwable failure) {
    Throwable cause = failure;
    while (cause instanceof CompletionException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    LOG.error("HTTP handler for {} failed", path, cause);
    return HttpAnswer.error(500, INTERNAL, "internal error: " + cause);
  }

  private void write(
      ChannelHandlerContext ctx, HttpAnswer answer, boolean keepAlive, Runnable exit) {
    boolean keep = keepAlive && !inFlight.draining() && ctx.channel().isActive();
    FullHttpResponse response;
    try {
      response = NettyAnswers.response(answer, keep, http10);
    } catch (RuntimeException e) {
      // A header HTTP cannot carry (a name that is not a token, a value with CR or LF).
      LOG.error(
          "an HTTP answer with status {} could not be encoded; answered 500", answer.status(), e);
      response =
          NettyAnswers.response(
              HttpAnswer.error(500, INTERNAL, "internal error: the answer could not be encoded"),
              keep,
              http10);
    }
    ChannelFuture written = ctx.writeAndFlush(response);
    written.addListener(
        future -> {
          if (exit != null) {
            exit.run();
          }
          if (!future.isSuccess()) {
            ctx.close();
          } else if (keep) {
            next(ctx);
          }
        });
    if (!keep) {
      LingeringClose.after(written);
    }
  }

  private void next(ChannelHandlerContext ctx) {
    answering = false;
    for (Object item = waiting.poll(); item != null; item = waiting.poll()) {
      if (item instanceof BodyLimit.Continue) {
        writeContinue(ctx);
      } else {
        serve(ctx, item);
        return;
      }
    }
    if (ctx.channel().isActive()) {
      deadlines.answered();
      ctx.channel().config().setAutoRead(true);
    }
  }

  /** Returns the 400, 414 or 431 answer to a request the decoder could not read. */
  private static HttpAnswer malformed(Throwable cause) {
    if (cause instanceof TooLongHttpLineException) {
      return HttpAnswer.error(414, RESOURCE_EXHAUSTED, "request line is too long");
    }
    if (cause instanceof TooLongHttpHeaderException || cause instanceof TooLongFrameException) {
      return HttpAnswer.error(431, RESOURCE_EXHAUSTED, "request header fields are too large");
    }
    return HttpAnswer.error(
        400, INVALID_ARGUMENT, "malformed HTTP request: " + String.valueOf(cause.getMessage()));
  }

  /** Returns the W3C trace context headers of a request: {@link HttpCall#traceContext}. */
  private static Map<String, String> traceContext(HttpHeaders headers) {
    return HttpCall.traceContext(
        headers.getAll(HttpCall.TRACEPARENT), headers.getAll(HttpCall.TRACESTATE));
  }

  /** Returns the raw query string of a request target without its {@code ?}, or empty. */
  static String queryOf(String target) {
    int q = target.indexOf('?');
    if (q < 0) {
      return "";
    }
    int fragment = target.indexOf('#', q);
    return target.substring(q + 1, fragment < 0 ? target.length() : fragment);
  }

  /**
   * Returns the decoded path of a request target, or null when its part before the query is not a
   * valid URI; the query is not checked here (characters such as {@code |} or {@code {} that a URI
   * must escape are common in queries, and Go's server accepts them). A target starting with
   * {@code /} is a path however many slashes it starts with ({@code //fast} is not the host {@code
   * fast}), as HTTP's origin form says.
   */
  static String pathOf(String target) {
    int end = target.length();
    for (int i = 0; i < target.length(); i++) {
      char c = target.charAt(i);
      if (c == '?' || c == '#') {
        end = i;
        break;
      }
    }
    try {
      String beforeQuery = target.substring(0, end);
      URI uri =
          beforeQuery.startsWith("/")
              ? new URI("http://origin-form" + beforeQuery)
              : new URI(beforeQuery);
      String path = uri.getPath();
      return path == null || !path.startsWith("/") ? null : path;
    } catch (URISyntaxException e) {
      return null;
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    waiting.clear();
    ctx.fireChannelInactive();
  }

  /**
   * Returns whether {@code cause} is the client's doing: a reset or closed connection, a connection
   * closed mid-request, or a failed TLS handshake.
   */
  private static boolean clientGone(Throwable cause) {
    return cause instanceof IOException
        || cause instanceof PrematureChannelClosureException
        || cause instanceof SSLException
        || cause.getCause() instanceof SSLException;
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    if (clientGone(cause)) {
      LOG.debug("HTTP connection {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
    } else {
      WARNINGS.warn(
          "connection", "HTTP connection {} failed: {}", ctx.channel().remoteAddress(), cause);
    }
    ctx.close();
  }
}
