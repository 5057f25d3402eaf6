package dev.weir.core.model;

import java.util.Map;

/**
 * A metadata map whose entries never change once it is made, which {@link RateLimitResponse} keeps
 * as given instead of copying: answers can share one such map, and what it holds beside its
 * entries (such as their encoding) stays with them. An implementation refuses every change.
 */
public interface ImmutableMetadata extends Map<String, String> {}
