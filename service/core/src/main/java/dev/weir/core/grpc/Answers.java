package dev.weir.core.grpc;

import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * The one place that hands a future's answer on: at once when the future has already completed
 * normally (the common case when every item is decided on this node), else when it completes.
 *
 * <p>The already-done path reads the value with {@link CompletableFuture#join()} and allocates
 * nothing: no callback is registered and, when the callers' error mappers capture nothing, no
 * lambda is created either.
 */
public final class Answers {

  private Answers() {}

  /**
   * Returns whether {@code future} has completed with a value (not exceptionally, not cancelled),
   * so that {@link CompletableFuture#join()} returns it without blocking or throwing.
   */
  public static boolean completedNormally(CompletableFuture<?> future) {
    return future.isDone() && !future.isCompletedExceptionally();
  }

  /**
   * Sends {@code future}'s value to {@code observer} as its one message followed by completion, or
   * its failure as {@code toError} of that failure: on the caller's thread when the future is
   * already done normally, else on the thread that completes it.
   */
  public static <T> void relay(
      CompletableFuture<? extends T> future,
      StreamObserver<? super T> observer,
      Function<? super Throwable, ? extends Throwable> toError) {
    if (completedNormally(future)) {
      observer.onNext(future.join());
      observer.onCompleted();
      return;
    }
    future.whenComplete(
        (value, failure) -> {
          if (failure != null) {
            observer.onError(toError.apply(failure));
          } else {
            observer.onNext(value);
            observer.onCompleted();
          }
        });
  }
}
