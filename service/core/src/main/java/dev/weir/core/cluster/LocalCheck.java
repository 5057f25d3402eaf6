package dev.weir.core.cluster;

import dev.weir.core.limiter.BucketCheck;

/**
 * A {@link BucketCheck} under the name the cluster's request path knows it by. The type lives in
 * {@code limiter} so that {@code cluster.global} needs nothing from this package; this name stays
 * until {@link ClusterRateLimitService} takes a {@code BucketCheck} itself.
 */
@FunctionalInterface
public interface LocalCheck extends BucketCheck {}
