package dev.weir.http;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.FullHttpMessage;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Reads each request body whole, up to the listener's one body limit: a body over it, whether its
 * {@code Content-Length} says so (before any of it is read, also when the client waits for {@code
 * 100 Continue}) or it grows past the limit as read, is answered with {@code refusal} (413) and the
 * connection is closed. The bytes of bodies not yet complete, on every connection of the listener
 * together, are held to a budget ({@link UnfinishedBodies}): a connection whose next bytes would
 * go over it is answered with {@code overBudget} (503) and closed, so clients that send most of a
 * large body and stall cannot fill the memory. Refusals and {@code 100 Continue} are not written
 * here but passed on as a {@link Refusal} or {@link #CONTINUE}, so that {@link RouteDispatcher}
 * sends them after the answers to earlier pipelined requests.
 */
final class BodyLimit extends HttpObjectAggregator {

  /**
   * The final answer to a request refused before its body was read whole, after which the
   * connection closes; {@code http10} is whether the request was HTTP/1.0.
   */
  record Refusal(HttpAnswer answer, boolean http10) {}

  /** The interim answer a request that waits for {@code 100 Continue} is owed. */
  record Continue() {}

  /** The one {@link Continue}. */
  static final Continue CONTINUE = new Continue();

  private final Function<HttpRequest, HttpAnswer> refusal;
  private final UnfinishedBodies unfinished;
  private final Supplier<HttpAnswer> overBudget;
  // This connection's bytes counted in unfinished (event loop only).
  private long held;
  private boolean refused;
  // Whether the request whose body is read is HTTP/1.0.
  private boolean http10;
  private ChannelHandlerContext context;

  /**
   * Creates the aggregator of one connection; {@code refusal} returns the answer to a request whose
   * body is too large (and records it), {@code overBudget} the answer to one whose bytes would take
   * {@code unfinished} over its budget (and records it).
   */
  BodyLimit(
      int maxBodyBytes,
      Function<HttpRequest, HttpAnswer> refusal,
      UnfinishedBodies unfinished,
      Supplier<HttpAnswer> overBudget) {
    super(maxBodyBytes, true);
    this.refusal = refusal;
    this.unfinished = unfinished;
    this.overBudget = overBudget;
  }

  @Override
  protected void decode(ChannelHandlerContext ctx, HttpObject msg, List<Object> out)
      throws Exception {
    if (refused) {
      return;
    }
    if (msg instanceof HttpRequest request) {
      http10 = !request.protocolVersion().isKeepAliveDefault();
    }
    if (msg instanceof HttpContent content && !(msg instanceof FullHttpMessage)) {
      int bytes = content.content().readableBytes();
      // a body growing past the limit is the aggregator's 413, not the budget's
      if (bytes > 0 && !(msg instanceof LastHttpContent) && held + bytes <= maxContentLength()) {
        if (!unfinished.take(bytes)) {
          refused = true;
          release();
          releaseCurrentMessage();
          out.add(new Refusal(overBudget.get(), http10));
          return;
        }
        held += bytes;
      }
    }
    super.decode(ctx, msg, out);
    if (msg instanceof LastHttpContent) {
      release();
    }
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) throws Exception {
    context = ctx;
    super.handlerAdded(ctx);
  }

  @Override
  public void handlerRemoved(ChannelHandlerContext ctx) throws Exception {
    release();
    super.handlerRemoved(ctx);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    release();
    super.channelInactive(ctx);
  }

  // Gives back what this connection's unfinished body holds of the budget.
  private void release() {
    if (held > 0) {
      unfinished.give(held);
      held = 0;
    }
  }

  @Override
  protected Object newContinueResponse(
      HttpMessage start, int maxContentLength, ChannelPipeline pipeline) {
    if (start instanceof HttpRequest request
        && HttpUtil.is100ContinueExpected(request)
        && HttpUtil.getContentLength(request, -1L) > maxContentLength) {
      // refused by handleOversizedMessage, as its Content-Length is over the limit
      return null;
    }
    String expect = start.headers().get(HttpHeaderNames.EXPECT);
    Object response = super.newContinueResponse(start, maxContentLength, pipeline);
    if (response instanceof HttpResponse interim
        && interim.status().codeClass() == HttpStatusClass.INFORMATIONAL) {
      ReferenceCountUtil.release(response);
      context.fireChannelRead(CONTINUE);
      return null;
    }
    if (response instanceof HttpResponse failed) {
      // An Expect the server does not meet (417): answered in its turn, like a 413.
      int status = failed.status().code();
      ReferenceCountUtil.release(response);
      refused = true;
      release();
      http10 = !start.protocolVersion().isKeepAliveDefault();
      context.fireChannelRead(
          new Refusal(
              HttpAnswer.error(
                  status,
                  3,
                  "header 'Expect' is '" + expect + "'; only '100-continue' is supported"),
              http10));
      return null;
    }
    return response;
  }

  @Override
  protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
    if (refused) {
      // already refused: a 417 for its Expect header (newContinueResponse)
      return;
    }
    refused = true;
    release();
    HttpAnswer answer =
        oversized instanceof HttpRequest request
            ? refusal.apply(request)
            : HttpAnswer.error(413, 8, "request body too large");
    if (oversized instanceof HttpRequest request) {
      http10 = !request.protocolVersion().isKeepAliveDefault();
    }
    ctx.fireChannelRead(new Refusal(answer, http10));
  }
}
