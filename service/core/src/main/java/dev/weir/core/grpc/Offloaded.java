package dev.weir.core.grpc;

import dev.weir.core.logging.RateLimitedLogger;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import java.util.ArrayDeque;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * A gRPC service whose calls run on a pool, except those of the methods kept on the transport's
 * threads: for a server built with {@code directExecutor()}, where handlers that may block must
 * not hold an event loop while those that never block should not pay for a thread hand-over.
 *
 * <p>Design: an offloaded call starts on the transport (interceptors and the handler's {@code
 * startCall} only set the call up); each later callback of its listener (message, half-close,
 * cancel, complete, ready) is queued for that call and run on the pool in arrival order, one at a
 * time, in the {@link Context} it arrived in, as grpc's own executor does for a whole server.
 */
public final class Offloaded {

  /** Warns of a failing handler once per method and failure type per interval, not per call. */
  private static final RateLimitedLogger WARNINGS = RateLimitedLogger.of(Offloaded.class);

  private Offloaded() {}

  /**
   * Returns {@code service} with the calls of every method not named in {@code onTransport} (full
   * method names) running on {@code pool}.
   */
  public static ServerServiceDefinition service(
      ServerServiceDefinition service, Set<String> onTransport, Executor pool) {
    ServerServiceDefinition.Builder out =
        ServerServiceDefinition.builder(service.getServiceDescriptor());
    for (ServerMethodDefinition<?, ?> method : service.getMethods()) {
      if (onTransport.contains(method.getMethodDescriptor().getFullMethodName())) {
        out.addMethod(method);
      } else {
        out.addMethod(offloaded(method, pool));
      }
    }
    return out.build();
  }

  private static <ReqT, RespT> ServerMethodDefinition<ReqT, RespT> offloaded(
      ServerMethodDefinition<ReqT, RespT> method, Executor pool) {
    ServerCallHandler<ReqT, RespT> handler = method.getServerCallHandler();
    return method.withServerCallHandler(
        (call, headers) -> new SerialListener<>(call, handler.startCall(call, headers), pool));
  }

  /**
   * A listener that runs its delegate's callbacks on a pool, one at a time, in order; a callback
   * that throws, an {@link Error} included, closes the call with {@code UNKNOWN}, as grpc does when
   * it runs the callbacks, and is logged at most once per method and failure type per interval.
   */
  private static final class SerialListener<ReqT> extends ServerCall.Listener<ReqT>
      implements Runnable {
    private final ServerCall<ReqT, ?> call;
    private final ServerCall.Listener<ReqT> delegate;
    private final Executor pool;
    private final Queue<Runnable> pending = new ArrayDeque<>();
    private boolean running;

    SerialListener(ServerCall<ReqT, ?> call, ServerCall.Listener<ReqT> delegate, Executor pool) {
      this.call = call;
      this.delegate = delegate;
      this.pool = pool;
    }

    @Override
    public void onMessage(ReqT message) {
      enqueue(() -> delegate.onMessage(message));
    }

    @Override
    public void onHalfClose() {
      enqueue(delegate::onHalfClose);
    }

    @Override
    public void onCancel() {
      enqueue(delegate::onCancel);
    }

    @Override
    public void onComplete() {
      enqueue(delegate::onComplete);
    }

    @Override
    public void onReady() {
      enqueue(delegate::onReady);
    }

    private void enqueue(Runnable callback) {
      Runnable inContext = Context.current().wrap(callback);
      synchronized (pending) {
        pending.add(inContext);
        if (running) {
          return;
        }
        running = true;
      }
      pool.execute(this);
    }

    /**
     * Runs the queued callbacks until none is left; a fatal error (see {@link #isFatal}) ends the
     * run after the remaining callbacks are handed to another one, and is rethrown.
     */
    @Override
    public void run() {
      try {
        drain();
      } catch (RuntimeException | Error e) {
        handOn(e);
        throw e;
      }
    }

    private void drain() {
      while (true) {
        Runnable next;
        synchronized (pending) {
          next = pending.poll();
          if (next == null) {
            running = false;
            return;
          }
        }
        try {
          next.run();
        } catch (RuntimeException | Error e) {
          fail(e);
          if (isFatal(e)) {
            throw e;
          }
        }
      }
    }

    /**
     * Whether {@code e} is left to end the pool's thread after the call is closed: a {@link
     * VirtualMachineError} other than {@link StackOverflowError} (which unwinding has cured), such
     * as {@link OutOfMemoryError}; anything else a handler throws is logged by {@link #fail} alone.
     */
    private static boolean isFatal(Throwable e) {
      return e instanceof VirtualMachineError && !(e instanceof StackOverflowError);
    }

    /**
     * Leaves the callbacks still queued to another run on the pool, or marks none running: for a
     * run ended by {@code failure}, to which a pool refusing the run is added as suppressed.
     */
    private void handOn(Throwable failure) {
      synchronized (pending) {
        if (pending.isEmpty()) {
          running = false;
          return;
        }
      }
      try {
        pool.execute(this);
      } catch (RejectedExecutionException shutDown) {
        synchronized (pending) {
          running = false;
        }
        failure.addSuppressed(shutDown);
      }
    }

    private void fail(Throwable e) {
      String method = call.getMethodDescriptor().getFullMethodName();
      WARNINGS.warn(method + ' ' + e.getClass().getName(), "{} failed", method, e);
      try {
        call.close(
            Status.UNKNOWN.withDescription("Application error processing RPC").withCause(e),
            new Metadata());
      } catch (IllegalStateException alreadyClosed) {
        // The handler closed the call before it threw.
      }
    }
  }
}
