package dev.weir.core.cluster.peer;

import dev.weir.core.cluster.batch.Batcher;
import dev.weir.core.cluster.batch.Scheduler;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.time.Clock;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.AnnounceResp;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.PushQuotaSharesReq;
import dev.weir.proto.gubernator.PushQuotaSharesResp;
import dev.weir.proto.gubernator.ReportQuotaUsageReq;
import dev.weir.proto.gubernator.ReportQuotaUsageResp;
import dev.weir.proto.gubernator.TransferBucketsReq;
import dev.weir.proto.gubernator.TransferBucketsResp;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import dev.weir.proto.gubernator.UpdatePeerGlobalsReq;
import dev.weir.proto.gubernator.UpdatePeerGlobalsResp;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The client side of {@code PeersV1} for one peer: one channel, one batching queue for forwarded
 * requests, and a memory of the last failed call (kept {@link #ERROR_MEMORY}) for health. Failed
 * membership announcements are not remembered.
 */
public final class PeerClient implements AutoCloseable {

  /** How long a failed call keeps the peer reported in health, as in Gubernator. */
  public static final Duration ERROR_MEMORY = Duration.ofMinutes(5);

  private final String address;
  private final ManagedChannel channel;
  private final PeersV1Grpc.PeersV1Stub stub;
  private final PeerClientSettings settings;
  private final Clock clock;
  private final Batcher<RateLimitRequest, RateLimitResponse> batcher;
  private final Batcher<QuotaUsage, QuotaShare> quotaBatcher;
  private final AtomicReference<RecentError> lastError = new AtomicReference<>();
  private final AtomicLong batchesSent = new AtomicLong();
  private final AtomicLong itemsSent = new AtomicLong();
  private volatile WeirMetrics metrics = WeirMetrics.NOOP;

  /** Creates a client of the peer at {@code address} over {@code channel}, which it owns. */
  public PeerClient(
      String address,
      ManagedChannel channel,
      PeerClientSettings settings,
      Scheduler scheduler,
      Clock clock) {
    this.address = address;
    this.channel = channel;
    this.stub = PeersV1Grpc.newStub(channel);
    this.settings = settings;
    this.clock = clock;
    this.batcher =
        new Batcher<>(
            settings.batchLimit(),
            settings.batchWait(),
            scheduler,
            batch -> getPeerRateLimits(batch, settings.batchTimeout(), "forwarding to"));
    this.quotaBatcher =
        new Batcher<>(
            settings.batchLimit(),
            settings.batchWait(),
            scheduler,
            batch -> reportQuotaUsage(batch, settings.batchTimeout()));
  }

  /** Reports every {@code GetPeerRateLimits} call this client sends (size, latency, outcome) to {@code sink}. */
  public void reportTo(WeirMetrics sink) {
    this.metrics = sink;
  }

  /** Starts connecting now, so that the first forwarded call does not pay for the connection. */
  public void connect() {
    channel.getState(true);
  }

  /** Returns the peer's advertised gRPC address. */
  public String address() {
    return address;
  }

  /**
   * Forwards {@code request} to the peer: queued for the next batch, or sent alone at once when it
   * has {@code NO_BATCHING} or batching is disabled. Fails with a {@link PeerException}.
   */
  public CompletableFuture<RateLimitResponse> forward(RateLimitRequest request) {
    if (settings.disableBatching() || request.has(Behavior.NO_BATCHING)) {
      return getPeerRateLimits(List.of(request), settings.batchTimeout(), "forwarding to")
          .thenApply(list -> list.get(0));
    }
    return batcher.submit(request);
  }

  /** Sends {@code requests} (at most 1000) as one call with deadline {@code timeout}. */
  public CompletableFuture<List<RateLimitResponse>> getPeerRateLimits(
      List<RateLimitRequest> requests, Duration timeout, String what) {
    GetPeerRateLimitsReq.Builder req = GetPeerRateLimitsReq.newBuilder();
    requests.forEach(r -> req.addRequests(PeerProtos.toProto(r)));
    CompletableFuture<GetPeerRateLimitsResp> call = new CompletableFuture<>();
    batchesSent.incrementAndGet();
    itemsSent.addAndGet(requests.size());
    long start = clock.monotonicNanos();
    WeirMetrics sink = metrics;
    call.whenComplete(
        (resp, error) ->
            sink.batchSent(
                address, requests.size(), clock.monotonicNanos() - start, error == null));
    detached(
        () ->
            stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .getPeerRateLimits(req.build(), observer(call)));
    return wrap(call, what)
        .thenApply(resp -> resp.getRateLimitsList().stream().map(PeerProtos::fromProto).toList());
  }

  /**
   * Sends {@code usage} to the peer, the owner of its bucket: queued for the next batch, or sent
   * alone at once when batching is disabled. Completes with the proxy's share; fails with a {@link
   * PeerException}.
   */
  public CompletableFuture<QuotaShare> reportQuota(QuotaUsage usage) {
    if (settings.disableBatching()) {
      return reportQuotaUsage(List.of(usage), settings.batchTimeout()).thenApply(l -> l.get(0));
    }
    return quotaBatcher.submit(usage);
  }

  /** Sends {@code usages} (at most 1000) as one {@code ReportQuotaUsage} with deadline {@code timeout}. */
  public CompletableFuture<List<QuotaShare>> reportQuotaUsage(
      List<QuotaUsage> usages, Duration timeout) {
    ReportQuotaUsageReq.Builder req = ReportQuotaUsageReq.newBuilder();
    usages.forEach(u -> req.addUsages(PeerProtos.toProto(u)));
    CompletableFuture<ReportQuotaUsageResp> call = new CompletableFuture<>();
    detached(
        () ->
            stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .reportQuotaUsage(req.build(), observer(call)));
    return wrap(call, "reporting quota usage to")
        .thenApply(resp -> resp.getSharesList().stream().map(PeerProtos::fromProto).toList());
  }

  /** Sends {@code pushes} to the peer, where their proxies' streams are; completes with how many arrived. */
  public CompletableFuture<Integer> pushQuotaShares(List<QuotaPush> pushes, Duration timeout) {
    PushQuotaSharesReq.Builder req = PushQuotaSharesReq.newBuilder();
    pushes.forEach(p -> req.addPushes(PeerProtos.toProto(p)));
    CompletableFuture<PushQuotaSharesResp> call = new CompletableFuture<>();
    detached(
        () ->
            stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .pushQuotaShares(req.build(), observer(call)));
    return wrap(call, "pushing quota shares to").thenApply(PushQuotaSharesResp::getDelivered);
  }

  /** Sends one {@code UpdatePeerGlobals} with {@code globals}, deadline {@code timeout}. */
  public CompletableFuture<Void> updatePeerGlobals(List<UpdatePeerGlobal> globals, Duration timeout) {
    CompletableFuture<UpdatePeerGlobalsResp> call = new CompletableFuture<>();
    detached(
        () ->
            stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .updatePeerGlobals(
                    UpdatePeerGlobalsReq.newBuilder().addAllGlobals(globals).build(), observer(call)));
    return wrap(call, "broadcasting globals to").thenApply(r -> null);
  }

  /** Hands {@code buckets} to the peer; completes with how many it accepted. */
  public CompletableFuture<Integer> transferBuckets(
      List<BucketSnapshot> buckets, String from, Duration timeout) {
    CompletableFuture<TransferBucketsResp> call = new CompletableFuture<>();
    detached(
        () ->
            stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .transferBuckets(
                    TransferBucketsReq.newBuilder().addAllBuckets(buckets).setFrom(from).build(),
                    observer(call)));
    return wrap(call, "handing buckets to").thenApply(TransferBucketsResp::getAccepted);
  }

  /** Tells the peer that {@code self} is leaving ({@code true}) or back ({@code false}). */
  public CompletableFuture<Void> announce(String self, boolean leaving, Duration timeout) {
    CompletableFuture<AnnounceResp> call = new CompletableFuture<>();
    detached(
        () ->
            stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .announce(
                    AnnounceReq.newBuilder().setAddress(self).setLeaving(leaving).build(),
                    observer(call)));
    return wrap(call, "announcing to", false).thenApply(r -> null);
  }

  /**
   * Asks this peer to copy {@code self}, about to announce its return, the buckets it will own
   * (Weir's {@code Announce} with {@code prepare_return}); completes when the peer answered.
   */
  public CompletableFuture<Void> prepareReturn(String self, Duration timeout) {
    CompletableFuture<AnnounceResp> call = new CompletableFuture<>();
    detached(
        () ->
            stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .announce(
                    AnnounceReq.newBuilder().setAddress(self).setPrepareReturn(true).build(),
                    observer(call)));
    return wrap(call, "asking for a copy from", false).thenApply(r -> null);
  }

  /** Returns the last failure's message if it happened within {@link #ERROR_MEMORY}, else empty. */
  public String recentError() {
    RecentError e = lastError.get();
    if (e == null || clock.monotonicNanos() - e.atNanos() > ERROR_MEMORY.toNanos()) {
      return "";
    }
    return e.message();
  }

  /** Returns the number of {@code GetPeerRateLimits} calls sent. */
  public long batchesSent() {
    return batchesSent.get();
  }

  /** Returns the number of items sent in {@code GetPeerRateLimits} calls. */
  public long itemsSent() {
    return itemsSent.get();
  }

  /** Sends what is queued, then shuts the channel down; calls in flight finish. */
  @Override
  public void close() {
    batcher.close();
    quotaBatcher.close();
    channel.shutdown();
  }

  /**
   * Closes the client of a peer that left the ring: queued forwarded items are not sent but fail with
   * a {@link PeerException}, so the request path routes them again on the new ring; calls in flight
   * finish.
   */
  public void abandon() {
    batcher.abandon(
        new PeerException(
            address,
            "peer '" + address + "' left the ring before the forwarded item was sent",
            null));
    quotaBatcher.abandon(
        new PeerException(
            address, "peer '" + address + "' left the ring before the quota usage was sent", null));
    channel.shutdown();
  }

  private <T> CompletableFuture<T> wrap(CompletableFuture<T> call, String what) {
    return wrap(call, what, true);
  }

  // Announcements are best effort (peers starting together miss each other): not a health problem.
  private <T> CompletableFuture<T> wrap(CompletableFuture<T> call, String what, boolean remember) {
    CompletableFuture<T> out = new CompletableFuture<>();
    call.whenComplete(
        (value, error) -> {
          if (error == null) {
            out.complete(value);
            return;
          }
          Status s = Status.fromThrowable(error);
          String detail =
              s.getCode() + (s.getDescription() == null ? "" : ": " + s.getDescription());
          String message = "error while " + what + " peer '" + address + "': " + detail;
          if (remember) {
            lastError.set(new RecentError(message, clock.monotonicNanos()));
          }
          out.completeExceptionally(new PeerException(address, message, error));
        });
    return out;
  }

  // Calls made while serving a peer's call must outlive it: they must not inherit its cancellation.
  private static void detached(Runnable start) {
    Context.ROOT.run(start);
  }

  private static <T> StreamObserver<T> observer(CompletableFuture<T> future) {
    return new StreamObserver<>() {
      @Override
      public void onNext(T value) {
        future.complete(value);
      }

      @Override
      public void onError(Throwable t) {
        future.completeExceptionally(t);
      }

      @Override
      public void onCompleted() {
        future.completeExceptionally(
            Status.INTERNAL.withDescription("no response").asRuntimeException());
      }
    };
  }

  private record RecentError(String message, long atNanos) {}
}
