package dev.weir.http;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.FullHttpMessage;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
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
 * large body and stall cannot fill the memory.
 */
final class BodyLimit extends HttpObjectAggregator {

  private final Function<HttpRequest, HttpAnswer> refusal;
  private final UnfinishedBodies unfinished;
  private final Supplier<HttpAnswer> overBudget;
  // This connection's bytes counted in unfinished (event loop only).
  private long held;
  private boolean refused;

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
    if (msg instanceof HttpContent content && !(msg instanceof FullHttpMessage)) {
      int bytes = content.content().readableBytes();
      // a body growing past the limit is the aggregator's 413, not the budget's
      if (bytes > 0 && !(msg instanceof LastHttpContent) && held + bytes <= maxContentLength()) {
        if (!unfinished.take(bytes)) {
          refused = true;
          release();
          releaseCurrentMessage();
          LingeringClose.after(
              ctx.writeAndFlush(NettyAnswers.response(overBudget.get(), false)));
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
      return NettyAnswers.response(refusal.apply(request), false);
    }
    return super.newContinueResponse(start, maxContentLength, pipeline);
  }

  @Override
  protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
    refused = true;
    release();
    HttpAnswer answer =
        oversized instanceof HttpRequest request
            ? refusal.apply(request)
            : HttpAnswer.error(413, 8, "request body too large");
    LingeringClose.after(ctx.writeAndFlush(NettyAnswers.response(answer, false)));
  }
}
