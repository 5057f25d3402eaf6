package dev.weir.http;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import java.util.function.Function;

/**
 * Reads each request body whole, up to the listener's one body limit: a body over it, whether its
 * {@code Content-Length} says so (before any of it is read, also when the client waits for {@code
 * 100 Continue}) or it grows past the limit as read, is answered with {@code refusal} (413) and the
 * connection is closed.
 */
final class BodyLimit extends HttpObjectAggregator {

  private final Function<HttpRequest, HttpAnswer> refusal;

  /**
   * Creates the aggregator of one connection; {@code refusal} returns the answer to a request whose
   * body is too large (and records it).
   */
  BodyLimit(int maxBodyBytes, Function<HttpRequest, HttpAnswer> refusal) {
    super(maxBodyBytes, true);
    this.refusal = refusal;
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
    HttpAnswer answer =
        oversized instanceof HttpRequest request
            ? refusal.apply(request)
            : HttpAnswer.error(413, 8, "request body too large");
    LingeringClose.after(ctx.writeAndFlush(NettyAnswers.response(answer, false)));
  }
}
