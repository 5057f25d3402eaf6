package dev.weir.http;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.TimeUnit;

/**
 * Closes a connection after a final answer without losing the answer: it shuts down the output (the
 * client reads the answer, then the end of stream), reads and discards whatever the client still
 * sends, and closes when the client does or after {@value #LINGER_MILLIS} ms. Closing at once while
 * request bytes are still arriving, as after a 413 for a body still being sent, makes the kernel
 * reset the connection, and the client may lose the answer with it.
 */
final class LingeringClose {

  /** The most time a closing connection waits for the client to close its side. */
  static final long LINGER_MILLIS = 2000;

  private static final Discard DISCARD = new Discard();

  private LingeringClose() {}

  /** Closes {@code written}'s connection lingering once the write is done. */
  static void after(ChannelFuture written) {
    written.addListener(done -> close(written.channel(), done.isSuccess()));
  }

  private static void close(Channel channel, boolean written) {
    if (!written || !(channel instanceof SocketChannel socket) || !channel.isActive()) {
      channel.close();
      return;
    }
    if (channel.pipeline().get(Discard.class) == null) {
      channel.pipeline().addFirst(DISCARD);
    }
    channel.config().setAutoRead(true);
    socket
        .shutdownOutput()
        .addListener(
            shut ->
                channel
                    .eventLoop()
                    .schedule(() -> channel.close(), LINGER_MILLIS, TimeUnit.MILLISECONDS));
  }

  /** Drops every byte a closing connection receives. */
  @Sharable
  private static final class Discard extends ChannelInboundHandlerAdapter {
    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ReferenceCountUtil.release(msg);
    }
  }
}
