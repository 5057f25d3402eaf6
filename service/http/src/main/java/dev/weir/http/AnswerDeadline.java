package dev.weir.http;

import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.timeout.WriteTimeoutHandler;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The deadline on writing each answer of a connection, so that a client which reads its answers
 * slowly or not at all cannot hold a place in flight: an answer not all written to the socket
 * within the {@linkplain HttpSettings#writeTimeout() write timeout} of being handed to the
 * connection closes it, which fails the write and so lets go of the answer's place. Each answer is
 * timed on its own, those of a pipelined sequence too (the next is written only once the one before
 * is).
 *
 * <p>It is Netty's {@link WriteTimeoutHandler}, placed right after the HTTP codec so that it times
 * whole responses. A cut-off answer is counted and its connection closed without firing an
 * exception: as with {@link RequestDeadlines}, the client is at fault, so nothing is logged.
 */
final class AnswerDeadline extends WriteTimeoutHandler {

  private final Runnable onTimeout;

  /** Creates the deadline of one connection; {@code onTimeout} runs for each answer cut off. */
  AnswerDeadline(Duration timeout, Runnable onTimeout) {
    super(timeout.toNanos(), TimeUnit.NANOSECONDS);
    this.onTimeout = onTimeout;
  }

  @Override
  protected void writeTimedOut(ChannelHandlerContext ctx) {
    if (ctx.channel().isActive()) {
      onTimeout.run();
      ctx.close();
    }
  }
}
