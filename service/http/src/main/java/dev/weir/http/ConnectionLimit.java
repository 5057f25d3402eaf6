package dev.weir.http;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The first handler of every connection: counts the listener's open connections and refuses one
 * beyond the most allowed as soon as it is accepted, before TLS or any request is read. A plain
 * connection is answered 503 with {@code refusal} and closed; a TLS connection is closed (no answer
 * can be read before a handshake). Nothing a refused connection sends is read.
 */
final class ConnectionLimit extends ChannelInboundHandlerAdapter {

  private final AtomicInteger open;
  private final int max;
  private final WaitingConnections waiting;
  private final boolean plain;
  private final HttpAnswer refusal;
  private final Runnable onRefused;
  private boolean counted;
  private boolean refused;

  /**
   * Creates the limit of one connection, sharing {@code open} and {@code waiting} with the
   * listener's others.
   */
  ConnectionLimit(
      AtomicInteger open,
      int max,
      WaitingConnections waiting,
      boolean plain,
      HttpAnswer refusal,
      Runnable onRefused) {
    this.open = open;
    this.max = max;
    this.waiting = waiting;
    this.plain = plain;
    this.refusal = refusal;
    this.onRefused = onRefused;
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) {
    boolean full = open.incrementAndGet() > max;
    if (full && waiting.closeOldest()) {
      onRefused.run();
    } else if (full) {
      open.decrementAndGet();
      refused = true;
      onRefused.run();
      if (plain) {
        LingeringClose.after(ctx.writeAndFlush(NettyAnswers.rawClosing(refusal)));
      } else {
        ctx.close();
      }
      return;
    }
    counted = true;
    ctx.fireChannelActive();
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (refused) {
      ReferenceCountUtil.release(msg);
      return;
    }
    ctx.fireChannelRead(msg);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    ctx.fireChannelInactive();
    if (counted) {
      counted = false;
      open.decrementAndGet();
    }
  }
}
