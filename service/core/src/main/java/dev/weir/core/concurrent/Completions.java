package dev.weir.core.concurrent;

import java.util.concurrent.CompletionException;

/**
 * Reading the failures that {@link java.util.concurrent.CompletableFuture} stages complete with.
 */
public final class Completions {

  private Completions() {}

  /**
   * Returns the failure a stage's {@code error} stands for: the cause of a {@link
   * CompletionException} that has one (the wrapper a dependent stage sees), else {@code error}
   * itself, {@code null} included.
   */
  public static Throwable cause(Throwable error) {
    return error instanceof CompletionException && error.getCause() != null
        ? error.getCause()
        : error;
  }
}
