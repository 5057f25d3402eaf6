package dev.weir.core.metrics;

import dev.weir.core.store.CacheStatistics;
import io.grpc.Status;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * The events and gauges a Weir node reports, in domain terms. Every method has a no-op default, so
 * {@link #NOOP} reports nothing and a component that is not given metrics costs nothing.
 *
 * <p>Design: callers describe what happened with enums and a few bounded strings (a gRPC method the
 * server knows, a matched HTTP route, a peer address); they never pass a rate-limit key, so label
 * cardinality stays bounded whatever clients send. {@link MicrometerMetrics} turns these events
 * into Micrometer meters; tests use a recording fake.
 */
public interface WeirMetrics {

  /** Metrics that report nothing. */
  WeirMetrics NOOP = new WeirMetrics() {};

  /**
   * Records one finished gRPC call of {@code method} (a full method name the server serves, or
   * {@code unknown}) with status {@code code} after {@code nanos}.
   */
  default void grpcCall(String method, Status.Code code, long nanos) {}

  /**
   * Records one HTTP request to {@code route} (a registered route path) answered with {@code
   * status} after {@code nanos}.
   */
  default void httpRequest(String route, int status, long nanos) {}

  /** Counts one rate-limit item answered with {@code result}. */
  default void checked(CheckResult result) {}

  /** Counts one request refused for {@code reason}. */
  default void refused(RefusalReason reason) {}

  /** Reports the number of {@code check} calls in flight, read when scraped. */
  default void watchChecksInFlight(LongSupplier inFlight) {}

  /** Reports the number of HTTP requests being answered, read when scraped. */
  default void watchHttpInFlight(LongSupplier inFlight) {}

  /** Reports the number of HTTP connections open, read when scraped. */
  default void watchHttpConnections(LongSupplier open) {}

  /** Reports the bucket store's size and access statistics, read when scraped. */
  default void watchCache(CacheStatistics cache) {}

  /**
   * Records one batch of {@code size} items sent to {@code peer} in {@code nanos}; ignored unless
   * {@code peer} is watched (see {@link #forgetPeer}).
   */
  default void batchSent(String peer, int size, long nanos, boolean ok) {}

  /** Reports the GLOBAL queues: hits waiting for owners and updates waiting for broadcast. */
  default void watchGlobalQueues(LongSupplier hitsQueued, LongSupplier broadcastsQueued) {}

  /**
   * Reports the GLOBAL items (a key's summed hits or its reset) dropped so far without their owner
   * confirming them, read when scraped.
   */
  default void watchGlobalDropped(LongSupplier dropped) {}

  /** Records one send of queued GLOBAL hits to their owners. */
  default void globalSend(long nanos, boolean ok) {}

  /** Records one broadcast of GLOBAL bucket states to the peers. */
  default void globalBroadcast(long nanos, boolean ok) {}

  /** Reports the buckets handed to and received from other nodes so far, read when scraped. */
  default void watchHandOff(LongSupplier sent, LongSupplier received) {}

  /**
   * Reports the forwarding batches sent to {@code peer} and the items they carried so far. Made one
   * at a time, never concurrently with {@link #watchPeerUp} or {@link #forgetPeer}.
   */
  default void watchPeerBatches(String peer, LongSupplier batches, LongSupplier items) {}

  /** Reports the number of peers (this node included), read when scraped. */
  default void watchPeerCount(LongSupplier peers) {}

  /** Counts one discovery failure of {@code mechanism} ({@code dns}, {@code etcd}, {@code k8s}). */
  default void discoveryError(String mechanism) {}

  /**
   * Reports whether discovery of {@code mechanism} ({@code dns}, {@code etcd}, {@code k8s}) is
   * currently working, read when scraped: {@code healthy} is false while the mechanism reports a
   * problem, however long it lasts.
   */
  default void watchDiscoveryHealth(String mechanism, BooleanSupplier healthy) {}

  /**
   * Reports whether {@code peer} answers ({@code up} false while it is found down), read when
   * scraped. Made one at a time, never concurrently with {@link #watchPeerBatches} or {@link
   * #forgetPeer}.
   */
  default void watchPeerUp(String peer, BooleanSupplier up) {}

  /** Counts {@code peer} being found down; ignored unless {@code peer} is watched. */
  default void peerDown(String peer) {}

  /**
   * Stops reporting every meter of {@code peer} (batches, items, whether it answers, the times it
   * was found down), once it is no longer a member: peers come and go with their addresses, and a
   * departed one must neither read as up nor leave series behind. A peer is watched from its first
   * {@link #watchPeerBatches} or {@link #watchPeerUp} call until this one; {@link #batchSent} and
   * {@link #peerDown} about it at any other time (a batch still in flight when it left, its
   * take-down one batch timeout after its leave notice) report nothing. The watch calls and this
   * one are made one at a time, never concurrently with each other (the server makes them under one
   * lock as its membership changes): a peer watched again while it is being forgotten may lose the
   * series of its return.
   */
  default void forgetPeer(String peer) {}

  /** Counts an item answered by a stand-in because its owner had not answered in time. */
  default void standIn() {}

  /** Counts a change of this node's ring (a peer added or taken off). */
  default void ringChanged() {}
}
