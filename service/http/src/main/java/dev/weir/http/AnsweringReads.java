package dev.weir.http;

import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;

/**
 * The handler in front of the body aggregator that drops the requests to read of a connection whose
 * auto-read is off, which is while {@link RouteDispatcher} makes its answer: the aggregator, and
 * every decoder that produced nothing from a read, ask for one more read whenever auto-read is off,
 * so without it a connection whose answer is held would go on reading and queueing whole pipelined
 * requests. A connection so holds, besides the request being answered, only what it had read when
 * that request was complete: at most one read's bytes of further requests.
 */
@Sharable
final class AnsweringReads extends ChannelOutboundHandlerAdapter {

  /** The one instance; it holds no state. */
  static final AnsweringReads INSTANCE = new AnsweringReads();

  private AnsweringReads() {}

  @Override
  public void read(ChannelHandlerContext ctx) {
    if (ctx.channel().config().isAutoRead()) {
      ctx.read();
    }
  }
}
