package dev.weir.http;

import dev.weir.core.config.GoDurations;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpHeadersFactory;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.LastHttpContent;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The deadlines of one connection, so that a slow or idle client cannot hold it: the request head
 * must be complete within the header timeout of the connection's start (or of the first byte of a
 * further request on it, or of the answer to the request before it when the two came together),
 * the body within the body timeout of the head, and a kept-alive connection must start its next
 * request within the idle timeout. Trickling bytes does not extend a deadline.
 * A connection past its deadline is closed; one whose body is late is first answered 408. None of
 * these runs while the connection's answer is being made; writing it has a deadline of its own
 * ({@link AnswerDeadline}).
 *
 * <p>It watches the connection through two handlers that share this state: {@link #raw()} at the
 * head of the pipeline sees every byte as it arrives (before TLS), {@link #decoded()} after the
 * HTTP decoder sees where heads and bodies end. Everything runs on the connection's event loop.
 */
final class RequestDeadlines {

  /** The user event that asks a connection to close when it is between requests. */
  static final Object DRAIN = new Object();

  /** The HTTP status of a request whose body is later than its timeout. */
  static final int LATE_BODY_STATUS = 408;

  /** gRPC {@code DEADLINE_EXCEEDED}. */
  private static final int DEADLINE_EXCEEDED = 4;

  private enum State {
    HEAD,
    BODY,
    ANSWERING,
    IDLE
  }

  private final HttpSettings settings;
  private final Runnable onTimeout;
  private final Consumer<HttpRequest> onLateBody;
  private final WaitingConnections waiting;
  private WaitingConnections.Wait wait;
  private ChannelHandlerContext ctx;
  private ScheduledFuture<?> timer;
  private State state = State.HEAD;
  private boolean bytesSeen;
  // The head of a request whose body is still to come was decoded while answering an earlier one.
  private boolean headWaiting;
  // The decoder has read the request line of a head it has not yet decoded whole.
  private boolean headStarted;
  // The head last decoded: the one whose body is awaited in BODY.
  private HttpRequest head;

  /**
   * Creates the deadlines of one connection; {@code onTimeout} runs for each request cut off,
   * {@code onLateBody} with the head of each request answered 408 (before the answer is written),
   * and the connection is in {@code waiting} while it waits for a request.
   */
  RequestDeadlines(
      HttpSettings settings,
      Runnable onTimeout,
      Consumer<HttpRequest> onLateBody,
      WaitingConnections waiting) {
    this.settings = settings;
    this.onTimeout = onTimeout;
    this.onLateBody = onLateBody;
    this.waiting = waiting;
  }

  /** Returns the handler to place first, before TLS: it sees each byte as it arrives. */
  ChannelDuplexHandler raw() {
    return new ChannelDuplexHandler() {
      @Override
      public void channelActive(ChannelHandlerContext context) {
        ctx = context;
        arm(State.HEAD, settings.headerTimeout());
        context.fireChannelActive();
      }

      @Override
      public void channelRead(ChannelHandlerContext context, Object msg) {
        if (msg instanceof ByteBuf bytes && bytes.isReadable()) {
          bytesSeen = true;
          if (state == State.IDLE) {
            arm(State.HEAD, settings.headerTimeout());
          }
        }
        context.fireChannelRead(msg);
      }

      @Override
      public void userEventTriggered(ChannelHandlerContext context, Object event) {
        if (event == DRAIN) {
          if (state == State.IDLE || (state == State.HEAD && !bytesSeen)) {
            context.close();
          }
          return;
        }
        context.fireUserEventTriggered(event);
      }

      @Override
      public void channelInactive(ChannelHandlerContext context) {
        cancel();
        stopWaiting();
        context.fireChannelInactive();
      }
    };
  }

  /**
   * Returns the factory of the HTTP decoder's request headers, which it asks once per request, when
   * the request line has been read: it tells the deadlines that a head has begun.
   */
  HttpHeadersFactory heads() {
    HttpHeadersFactory headers = DefaultHttpHeadersFactory.headersFactory();
    return new HttpHeadersFactory() {
      @Override
      public HttpHeaders newHeaders() {
        headStarted = true;
        // the answer to the request before it may have left while the read was still decoded
        if (state == State.IDLE) {
          bytesSeen = true;
          arm(State.HEAD, settings.headerTimeout());
        }
        return headers.newHeaders();
      }

      @Override
      public HttpHeaders newEmptyHeaders() {
        return headers.newEmptyHeaders();
      }
    };
  }

  /** Returns the handler to place right after the HTTP decoder. */
  ChannelInboundHandlerAdapter decoded() {
    return new ChannelInboundHandlerAdapter() {
      @Override
      public void channelRead(ChannelHandlerContext context, Object msg) {
        if (msg instanceof LastHttpContent) {
          headWaiting = false;
          if (state == State.HEAD || state == State.BODY) {
            cancel();
            stopWaiting();
            state = State.ANSWERING;
          }
        } else if (msg instanceof HttpRequest request) {
          headStarted = false;
          head = request;
          // A pipelined head can come while an earlier request is answered, or after its answer
          // left and before the connection read again: its body's deadline starts when it is the
          // current request.
          if (state == State.ANSWERING) {
            headWaiting = true;
          } else if (state != State.BODY) {
            arm(State.BODY, settings.bodyTimeout());
          }
        }
        context.fireChannelRead(msg);
      }
    };
  }

  /** Marks the connection as making an answer: no deadline runs until {@link #answered()}. */
  void answering() {
    cancel();
    stopWaiting();
    state = State.ANSWERING;
  }

  /**
   * Marks the answer as sent: the connection waits for its next request, or, when that request's
   * head came while answering, for its body within the body timeout, or, when part of that head
   * came, for the rest of it within the header timeout.
   */
  void answered() {
    if (headWaiting) {
      headWaiting = false;
      bytesSeen = true;
      if (ctx != null) {
        stopWaiting();
        wait = waiting.start(ctx.channel(), System.nanoTime());
      }
      arm(State.BODY, settings.bodyTimeout());
      return;
    }
    if (headStarted) {
      bytesSeen = true;
      arm(State.HEAD, settings.headerTimeout());
      return;
    }
    bytesSeen = false;
    arm(State.IDLE, settings.idleTimeout());
  }

  private void arm(State next, Duration timeout) {
    cancel();
    if (next != State.BODY && ctx != null) {
      stopWaiting();
      wait = waiting.start(ctx.channel(), System.nanoTime());
    }
    state = next;
    if (ctx != null) {
      timer = ctx.executor().schedule(() -> expire(next), timeout.toNanos(), TimeUnit.NANOSECONDS);
    }
  }

  private void stopWaiting() {
    waiting.end(wait);
    wait = null;
  }

  private void cancel() {
    if (timer != null) {
      timer.cancel(false);
      timer = null;
    }
  }

  private void expire(State expired) {
    if (state != expired || !ctx.channel().isActive()) {
      return;
    }
    timer = null;
    stopWaiting();
    state = State.ANSWERING;
    switch (expired) {
      case HEAD -> {
        if (bytesSeen) {
          onTimeout.run();
        }
        ctx.close();
      }
      case BODY -> {
        onTimeout.run();
        onLateBody.accept(head);
        HttpAnswer late =
            HttpAnswer.error(
                LATE_BODY_STATUS,
                DEADLINE_EXCEEDED,
                "request body not complete within "
                    + GoDurations.format(settings.bodyTimeout())
                    + " of its head (WEIR_HTTP_BODY_TIMEOUT)");
        LingeringClose.after(ctx.channel().writeAndFlush(NettyAnswers.response(late, false)));
      }
      default -> ctx.close();
    }
  }
}
