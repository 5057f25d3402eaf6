package dev.weir.core.engine;

import dev.weir.core.model.RateLimitResponse;

/**
 * What the engine decided for one request: the bucket's next state and the answer.
 *
 * @param next the state to store, or {@code null} to remove the bucket
 * @param response the answer to the request
 */
public record Decision(BucketState next, RateLimitResponse response) {}
