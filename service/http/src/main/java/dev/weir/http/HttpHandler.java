package dev.weir.http;

import java.util.concurrent.CompletionStage;

/**
 * The code behind one {@link HttpRoute}: turns a request into the stage of its answer. It runs on
 * one of the listener's I/O threads, so it must not block: work that waits (a rate-limit check
 * forwarded to a peer) returns an incomplete stage, and the listener writes the answer when it
 * completes. A handler that throws, or whose stage fails, is answered 500.
 */
@FunctionalInterface
public interface HttpHandler {

  /** Returns the stage of the answer to {@code call}. */
  CompletionStage<HttpAnswer> handle(HttpCall call);
}
