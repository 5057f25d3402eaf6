package dev.weir.core.cluster.peer;

import dev.weir.core.cluster.batch.Batcher;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.time.Clock;
import dev.weir.core.time.Scheduler;
import dev.weir.core.toplimited.TopLimitedView;
import dev.weir.core.tracing.ClusterTracing;
import dev.weir.core.tracing.GuardedTracing;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.AnnounceResp;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.PushQuotaSharesReq;
import dev.weir.proto.gubernator.PushQuotaSharesResp;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.ReportQuotaUsageReq;
import dev.weir.proto.gubernator.ReportQuotaUsageResp;
import dev.weir.proto.gubernator.TopLimitedReq;
import dev.weir.proto.gubernator.TopLimitedResp;
import dev.weir.proto.gubernator.TransferBucketsReq;
import dev.weir.proto.gubernator.TransferBucketsResp;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import dev.weir.proto.gubernator.UpdatePeerGlobalsReq;
import dev.weir.proto.gubernator.UpdatePeerGlobalsResp;
import io.grpc.Attributes;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientStreamTracer;
import io.grpc.ConnectivityState;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.ToIntFunction;

/**
 * The client side of {@code PeersV1} for one peer: one channel, one batching queue for forwarded
 * requests, and a report of every call's outcome and of the channel's connection to a {@link
 * PeerCallObserver} (the node's {@link PeerLiveness}).
 *
 * <p>Design: calls that carry decisions or state (forwarded items, GLOBAL hits and broadcasts,
 * hand-offs, probes) wait for a connection up to their deadline instead of failing while one is
 * being set up, so a starting cluster does not fail its first forwards; while the peer is down
 * (between {@link #peerDown} and {@link #peerUp}) they do not wait, so one that raced with the
 * peer going down fails at once and its items are routed again. A call without an answer
 * ({@code UNAVAILABLE}, {@code DEADLINE_EXCEEDED}) is reported as conclusive when it is {@code
 * UNAVAILABLE} or no connection was up, any other error status as the peer's answer; announcements
 * are best effort (peers starting together miss each other) and only their successes are reported.
 * When the channel fails to connect it is reported unreachable; when a working connection drops it
 * reconnects at once, so a peer that died is noticed without waiting for traffic. A connection on
 * which forwarded batches went unanswered for {@link #STALLED_STREAM} is dropped and made afresh
 * (its batches' failures are not conclusive: the connection was up); a batch the stream refuses
 * unsent because the peer is {@link ForwardStream#MAX_UNANSWERED} batches behind is not reported
 * at all (the batches it would have waited behind are). {@link #peerDown}
 * cancels the calls in flight (their items are routed again) and drops the connection, which may be
 * half-open; {@link #probe} skips gRPC's reconnect backoff, so a peer that returns is reached
 * within one probe.
 */
public final class PeerClient implements AutoCloseable {

  /**
   * How long probes must find one connection attempt under way before it is dropped and made
   * afresh: past the kernel's first SYN resend (1 s), so a handshake lost to a fault is not waited
   * for, and long enough for a handshake over a slow link.
   */
  public static final Duration STUCK_CONNECT = Duration.ofSeconds(2);

  /**
   * How long forwarded batches may go unanswered on a connection before it is dropped and made
   * afresh. TCP resends a segment lost three times in a row 1.4 s after first sending it, and one
   * lost a fourth time 3 s after: a connection that loses a segment now and then is kept, one whose
   * resends have backed off to seconds (after a lossy spell, up to tens of seconds) is replaced.
   */
  public static final Duration STALLED_STREAM = Duration.ofSeconds(2);

  private static final long NOT_CONNECTING = Long.MIN_VALUE;

  private final String address;
  private final ManagedChannel channel;
  private final PeersV1Grpc.PeersV1Stub stub;
  private final PeerClientSettings settings;
  private final Clock clock;
  private final Batcher<RateLimitRequest, RateLimitResponse> batcher;
  private final ForwardStream stream;
  private final Batcher<QuotaUsage, QuotaShare> quotaBatcher;
  private final AtomicReference<Context.CancellableContext> callContext =
      new AtomicReference<>(Context.ROOT.withCancellation());
  private final AtomicLong batchesSent = new AtomicLong();
  private final AtomicLong itemsSent = new AtomicLong();
  private volatile WeirMetrics metrics = WeirMetrics.NOOP;
  private volatile ClusterTracing tracing = ClusterTracing.NONE;
  private volatile PeerCallObserver observer = PeerCallObserver.NONE;
  private volatile boolean down;
  /** When a probe first found the current connection attempt under way; probes run one at a time. */
  private volatile long connectingSeenAt = NOT_CONNECTING;

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
            Batcher.MAX_IN_FLIGHT,
            Batcher.maxQueued(settings.batchLimit()),
            clock,
            EventLoopRoundEnd.INSTANCE,
            this::forwardBatch);
    this.quotaBatcher =
        new Batcher<>(
            settings.batchLimit(),
            settings.batchWait(),
            clock,
            batch -> reportQuotaUsage(batch, settings.batchTimeout()));
    this.stream =
        new ForwardStream(
            answers -> {
              AtomicReference<StreamObserver<ForwardCodec.Batch>> requests =
                  new AtomicReference<>();
              detached(() -> requests.set(openForwardStream(answers)));
              return requests.get();
            },
            scheduler,
            clock,
            settings.batchTimeout(),
            STALLED_STREAM,
            channel::enterIdle);
    watchConnection(ConnectivityState.IDLE);
  }

  /** Reports every call's outcome and the channel's failed connections to {@code sink}. */
  public void observe(PeerCallObserver sink) {
    this.observer = sink;
  }

  /** Reports every {@code GetPeerRateLimits} call this client sends (size, latency, outcome) to {@code sink}. */
  public void reportTo(WeirMetrics sink) {
    this.metrics = sink;
  }

  /**
   * Traces every forwarded batch with {@code value} (default {@link ClusterTracing#NONE}),
   * {@linkplain GuardedTracing guarded} so that a failing tracer never fails a batch.
   */
  public void traceWith(ClusterTracing value) {
    this.tracing = GuardedTracing.of(value);
  }

  /** Starts connecting now, so that the first forwarded call does not pay for the connection. */
  public void connect() {
    channel.getState(true);
  }

  /**
   * Skips gRPC's reconnect backoff: a channel waiting to reconnect tries at once, and a connection
   * attempt found under way for {@link #STUCK_CONNECT} or more is dropped and made afresh (as
   * {@link #probe} does), so a call waiting for a connection (a probe sent while the peer was down)
   * reaches a peer that just returned.
   */
  public void reconnectNow() {
    kickConnection();
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
    if (alone(request)) {
      return answered(
              1, unary(List.of(request), settings.batchTimeout()), "forwarding to", true)
          .thenApply(list -> list.get(0));
    }
    return batcher.submit(request);
  }

  /**
   * Forwards {@code requests} to the peer as {@link #forward} does, those that may be batched
   * together in one batch (they are queued at once, also when others go alone); one future per
   * request, in order.
   */
  public List<CompletableFuture<RateLimitResponse>> forwardAll(List<RateLimitRequest> requests) {
    if (requests.size() == 1) {
      return List.of(forward(requests.get(0)));
    }
    boolean anyAlone = false;
    for (RateLimitRequest r : requests) {
      anyAlone |= alone(r);
    }
    if (!anyAlone) {
      return batcher.submitAll(requests);
    }
    return Batcher.submitAllButAlone(requests, this::alone, this::forward, batcher::submitAll);
  }

  private boolean alone(RateLimitRequest request) {
    return settings.disableBatching() || request.has(Behavior.NO_BATCHING);
  }

  /**
   * Sends {@code requests} (at most 1000) as one call with deadline {@code timeout}: GLOBAL hits and
   * items handed on, which {@link #batchesSent} and {@link #itemsSent} leave out (they count
   * forwarding only).
   */
  public CompletableFuture<List<RateLimitResponse>> getPeerRateLimits(
      List<RateLimitRequest> requests, Duration timeout, String what) {
    return answered(requests.size(), unary(requests, timeout), what, false);
  }

  /**
   * Sends a batch on the forwarding stream, or as a {@code GetPeerRateLimits} call when the peer
   * does not serve streams (found out on the first batch sent to it).
   */
  private CompletableFuture<List<RateLimitResponse>> forwardBatch(List<RateLimitRequest> batch) {
    ClusterTracing.Span span = tracing.batch(address, batch);
    CompletableFuture<List<RateLimitResponse>> answers = sendBatch(batch);
    if (span != ClusterTracing.Span.NONE) {
      answers.whenComplete(
          (a, e) -> span.end(e == null ? null : RateLimitResponse.error(String.valueOf(e))));
    }
    return answers;
  }

  private CompletableFuture<List<RateLimitResponse>> sendBatch(List<RateLimitRequest> batch) {
    Duration timeout = settings.batchTimeout();
    if (stream.unsupported()) {
      return answered(batch.size(), unary(batch, timeout), "forwarding to", true);
    }
    CompletableFuture<List<RateLimitResponse>> onStream = stream.send(batch);
    if (ForwardStream.notSent(onStream)) {
      // Refused on the spot (closed, behind, could not open): not sent, so neither counted in
      // batchesSent and itemsSent nor timed as a failed send.
      return wrap(onStream, "forwarding to");
    }
    CompletableFuture<List<RateLimitResponse>> sent =
        onStream.exceptionallyCompose(
            e ->
                e instanceof ForwardStream.Unsupported
                    ? unary(batch, timeout)
                    : CompletableFuture.failedFuture(e));
    return answered(batch.size(), sent, "forwarding to", true);
  }

  private StreamObserver<ForwardCodec.Batch> openForwardStream(
      StreamObserver<ForwardCodec.Answers> answers) {
    PeersV1Grpc.PeersV1Stub to = dataStub();
    return ClientCalls.asyncBidiStreamingCall(
        to.getChannel().newCall(PeerMethods.FORWARD_BATCHES, to.getCallOptions()), answers);
  }

  /**
   * Sends {@code requests} as one {@code GetPeerRateLimits}; the future completes with one answer
   * per request, in order, or fails with {@code INTERNAL} when the peer answered another number of
   * items (as a batch on the stream does).
   */
  private CompletableFuture<List<RateLimitResponse>> unary(
      List<RateLimitRequest> requests, Duration timeout) {
    GetPeerRateLimitsReq.Builder req = GetPeerRateLimitsReq.newBuilder();
    requests.forEach(r -> req.addRequests(PeerProtos.toProto(r)));
    CompletableFuture<GetPeerRateLimitsResp> resp = new CompletableFuture<>();
    detached(
        () ->
            dataStub()
                .withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .getPeerRateLimits(req.build(), observer(resp)));
    return counted(resp, requests.size());
  }

  /**
   * Returns the answers of {@code resp}, a {@code GetPeerRateLimits} sent {@code expected} items;
   * fails with {@code INTERNAL} when the peer answered another number of items.
   */
  private static CompletableFuture<List<RateLimitResponse>> counted(
      CompletableFuture<GetPeerRateLimitsResp> resp, int expected) {
    return counted(
        resp,
        expected,
        GetPeerRateLimitsResp::getRateLimitsCount,
        answer -> fromProtos(answer.getRateLimitsList()));
  }

  /**
   * Returns the answers {@code answers} reads from {@code resp}, the answer to a call sent {@code
   * expected} items; fails with {@code INTERNAL} when {@code count} finds another number of items.
   */
  private static <M, A> CompletableFuture<List<A>> counted(
      CompletableFuture<M> resp,
      int expected,
      ToIntFunction<M> count,
      Function<M, List<A>> answers) {
    CompletableFuture<List<A>> call = new CompletableFuture<>();
    resp.whenComplete(
        (answer, error) -> {
          if (error != null) {
            call.completeExceptionally(error);
          } else if (count.applyAsInt(answer) != expected) {
            call.completeExceptionally(
                Status.INTERNAL
                    .withDescription(
                        "expected " + expected + " answers, got " + count.applyAsInt(answer))
                    .asRuntimeException());
          } else {
            call.complete(answers.apply(answer));
          }
        });
    return call;
  }

  /**
   * Reports the outcome of a batch of {@code size} items sent as {@code call}, and counts it in
   * {@link #batchesSent} and {@link #itemsSent} when it is {@code forwarding}.
   */
  private CompletableFuture<List<RateLimitResponse>> answered(
      int size, CompletableFuture<List<RateLimitResponse>> call, String what, boolean forwarding) {
    if (forwarding) {
      batchesSent.incrementAndGet();
      itemsSent.addAndGet(size);
    }
    long start = clock.monotonicNanos();
    WeirMetrics sink = metrics;
    call.whenComplete(
        (resp, error) ->
            sink.batchSent(address, size, clock.monotonicNanos() - start, error == null));
    return wrap(call, what);
  }

  private static List<RateLimitResponse> fromProtos(List<RateLimitResp> answers) {
    List<RateLimitResponse> out = new ArrayList<>(answers.size());
    for (RateLimitResp a : answers) {
      out.add(PeerProtos.fromProto(a));
    }
    return out;
  }

  /**
   * Sends {@code requests} to {@code target} through this peer, which reaches it when this node
   * does not ({@code GetPeerRateLimits} with Weir's {@code weir_relay_to}); with no requests it is an
   * indirect probe of {@code target}. Only this peer not answering at all ({@code UNAVAILABLE}) is
   * reported against it: an error status it answers with, or a deadline, may be the target's doing;
   * a refusal with the trailer {@link UnsentRelay#TARGET_LEFT} is reported as {@code target} left
   * ({@link PeerCallObserver#relayTargetLeft}), with when the relay was sent.
   * Fails with {@code INTERNAL} when the answer holds another number of items than {@code requests}.
   */
  public CompletableFuture<List<RateLimitResponse>> relay(
      String target, List<RateLimitRequest> requests, Duration timeout) {
    GetPeerRateLimitsReq.Builder req = GetPeerRateLimitsReq.newBuilder().setWeirRelayTo(target);
    requests.forEach(r -> req.addRequests(PeerProtos.toProto(r)));
    CompletableFuture<GetPeerRateLimitsResp> call = new CompletableFuture<>();
    long sent = clock.monotonicNanos();
    detached(
        () ->
            stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .getPeerRateLimits(req.build(), observer(call)));
    return wrap(
        counted(call, requests.size()),
        "relaying to '" + target + "' through",
        Reporting.RELAY,
        target,
        sent);
  }

  /**
   * Sends a call another node relays through this one on to this peer, its target, with deadline
   * {@code timeout}; fails at once, without waiting for a connection, when none is up.
   */
  public CompletableFuture<GetPeerRateLimitsResp> relayOnward(
      GetPeerRateLimitsReq request, Duration timeout) {
    CompletableFuture<GetPeerRateLimitsResp> call = new CompletableFuture<>();
    detached(
        () ->
            stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .getPeerRateLimits(request, observer(call)));
    return wrap(call, "relaying to", Reporting.ONWARD);
  }

  /**
   * Returns whether {@code error} is a peer's answer that it is not serving as a cluster member
   * ({@code UNAVAILABLE} {@link PeersService#NOT_SERVING}), its answer to a probe while it joins or
   * leaves.
   */
  static boolean notServing(Throwable error) {
    Status s = Status.fromThrowable(error);
    return s.getCode() == Status.Code.UNAVAILABLE
        && PeersService.NOT_SERVING.equals(s.getDescription());
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

  /**
   * Sends {@code usages} (at most 1000) as one {@code ReportQuotaUsage} with deadline {@code
   * timeout}; the future completes with one share per usage, in order, or fails with {@code
   * INTERNAL} when the peer answered another number of shares.
   */
  public CompletableFuture<List<QuotaShare>> reportQuotaUsage(
      List<QuotaUsage> usages, Duration timeout) {
    ReportQuotaUsageReq.Builder req = ReportQuotaUsageReq.newBuilder();
    usages.forEach(u -> req.addUsages(QuotaProtos.toProto(u)));
    CompletableFuture<ReportQuotaUsageResp> call = new CompletableFuture<>();
    AtomicBoolean streamMade = new AtomicBoolean();
    detached(
        () ->
            stub.withInterceptors(tracing(streamMade))
                .withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .reportQuotaUsage(req.build(), observer(call, address, streamMade)));
    return wrap(
        counted(
            call,
            usages.size(),
            ReportQuotaUsageResp::getSharesCount,
            resp -> resp.getSharesList().stream().map(QuotaProtos::fromProto).toList()),
        "reporting quota usage to");
  }

  /** Sends {@code pushes} to the peer, where their proxies' streams are; completes with how many arrived. */
  public CompletableFuture<Integer> pushQuotaShares(List<QuotaPush> pushes, Duration timeout) {
    PushQuotaSharesReq.Builder req = PushQuotaSharesReq.newBuilder();
    pushes.forEach(p -> req.addPushes(QuotaProtos.toProto(p)));
    CompletableFuture<PushQuotaSharesResp> call = new CompletableFuture<>();
    detached(
        () ->
            stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .pushQuotaShares(req.build(), observer(call)));
    return wrap(call, "pushing quota shares to").thenApply(PushQuotaSharesResp::getDelivered);
  }

  /**
   * Asks the peer for its top-limited keys, at most {@code limit}, with deadline {@code timeout};
   * fails with a {@link PeerException}, whose status is {@code FAILED_PRECONDITION} when the peer
   * does not count them (which does not count against the peer's health).
   */
  public CompletableFuture<TopLimitedView> topLimited(int limit, Duration timeout) {
    CompletableFuture<TopLimitedResp> call = new CompletableFuture<>();
    detached(
        () ->
            stub.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .topLimited(TopLimitedReq.newBuilder().setLimit(limit).build(), observer(call)));
    return wrap(call, "asking for the top-limited keys of", Reporting.ASK)
        .thenApply(TopLimitedProtos::fromProto);
  }

  /** Sends one {@code UpdatePeerGlobals} with {@code globals}, deadline {@code timeout}. */
  public CompletableFuture<Void> updatePeerGlobals(List<UpdatePeerGlobal> globals, Duration timeout) {
    CompletableFuture<UpdatePeerGlobalsResp> call = new CompletableFuture<>();
    detached(
        () ->
            dataStub()
                .withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .updatePeerGlobals(
                    UpdatePeerGlobalsReq.newBuilder().addAllGlobals(globals).build(), observer(call)));
    return wrap(call, "broadcasting globals to").thenApply(r -> null);
  }

  /**
   * Hands {@code buckets} to the peer; completes with how many it accepted. The call waits up to
   * {@code timeout} for a connection even while the peer is down here: a peer that comes back gets
   * the buckets of its keys the moment it is put back on the ring, often before this node's own
   * connection to it is up again.
   */
  public CompletableFuture<Integer> transferBuckets(
      List<BucketSnapshot> buckets, String from, Duration timeout) {
    return transfer(
        TransferBucketsReq.newBuilder().addAllBuckets(buckets).setFrom(from).build(),
        stub.withWaitForReady(),
        timeout,
        "handing buckets to",
        Reporting.CALL,
        null);
  }

  /**
   * Hands {@code buckets}, sent by {@code from}, to {@code target} through this peer, which reaches
   * it when this node does not ({@code TransferBuckets} with Weir's {@code weir_relay_to});
   * completes with how many the target accepted. As for {@link #relay}, only this peer not
   * answering at all ({@code UNAVAILABLE}) is reported against it, and a refusal naming {@code
   * target} as left is reported as such.
   */
  public CompletableFuture<Integer> relayTransfer(
      String target, List<BucketSnapshot> buckets, String from, Duration timeout) {
    TransferBucketsReq req =
        TransferBucketsReq.newBuilder()
            .addAllBuckets(buckets)
            .setFrom(from)
            .setWeirRelayTo(target)
            .build();
    return transfer(
        req, stub, timeout, "handing buckets to '" + target + "' through", Reporting.RELAY, target);
  }

  /**
   * Sends a bucket transfer another node relays through this one on to this peer, its target, with
   * deadline {@code timeout}; fails at once, without waiting for a connection, when none is up.
   */
  public CompletableFuture<Integer> transferOnward(TransferBucketsReq request, Duration timeout) {
    return transfer(request, stub, timeout, "relaying buckets to", Reporting.CALL, null);
  }

  /**
   * Sends {@code request} on {@code via} with deadline {@code timeout}; completes with how many
   * buckets the peer accepted, failing as {@code reporting} says ({@code target}: the relay's
   * target, or null).
   */
  private CompletableFuture<Integer> transfer(
      TransferBucketsReq request,
      PeersV1Grpc.PeersV1Stub via,
      Duration timeout,
      String what,
      Reporting reporting,
      String target) {
    CompletableFuture<TransferBucketsResp> call = new CompletableFuture<>();
    long sent = clock.monotonicNanos();
    detached(
        () ->
            via.withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .transferBuckets(request, observer(call)));
    return wrap(call, what, reporting, target, sent).thenApply(TransferBucketsResp::getAccepted);
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
    return wrap(call, "announcing to", Reporting.NOTICE).thenApply(r -> null);
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
    return wrap(call, "asking for a copy from", Reporting.NOTICE).thenApply(r -> null);
  }

  /**
   * Asks the peer whether it answers: skips the channel's reconnect backoff, then sends an empty
   * {@code GetPeerRateLimits} that waits for a connection up to {@code timeout}. A success is
   * reported as a probe's (the peer serves: it is back), a failure like any call's; the future
   * completes either way.
   *
   * <p>A connection attempt that probes have found under way for {@link #STUCK_CONNECT} or more is
   * dropped and made afresh: its handshake was lost to the fault that took the peer down, and the
   * kernel would resend it only 1, 3, 7 or 15 s after it began, so the peer would be found back that
   * long after the network healed. A younger attempt is left alone (a handshake over a slow link
   * may take longer than one probe).
   */
  public CompletableFuture<Void> probe(Duration timeout) {
    return probe(timeout, Reporting.PROBE);
  }

  /**
   * Asks an up peer with unanswered calls whether it answers, as {@link #probe} does, but reports
   * only a success (which clears the peer's error): a failure is not counted against the peer, whose
   * calls alone take it down.
   */
  public CompletableFuture<Void> confirm(Duration timeout) {
    return probe(timeout, Reporting.CONFIRM);
  }

  private CompletableFuture<Void> probe(Duration timeout, Reporting reporting) {
    kickConnection();
    CompletableFuture<GetPeerRateLimitsResp> call = new CompletableFuture<>();
    detached(
        () ->
            stub.withWaitForReady()
                .withDeadlineAfter(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance(), observer(call)));
    return wrap(call, "probing", reporting).handle((resp, error) -> null);
  }

  // A handshake lost to the fault would be resent by the kernel only seconds after it began.
  private void kickConnection() {
    if (channel.getState(false) == ConnectivityState.CONNECTING) {
      long now = clock.monotonicNanos();
      if (connectingSeenAt == NOT_CONNECTING) {
        connectingSeenAt = now;
      } else if (now - connectingSeenAt >= STUCK_CONNECT.toNanos()) {
        connectingSeenAt = NOT_CONNECTING;
        channel.enterIdle();
      }
    } else {
      connectingSeenAt = NOT_CONNECTING;
    }
    channel.resetConnectBackoff();
  }

  /**
   * Acts on the peer having been found down: cancels the calls in flight to it (their items fail
   * and are routed again) and drops the channel's connection, which may be half-open, so that the
   * next call or probe connects afresh.
   */
  public void peerDown(String reason) {
    down = true;
    callContext
        .getAndSet(Context.ROOT.withCancellation())
        .cancel(new PeerException(address, "peer '" + address + "' is down: " + reason, null));
    channel.enterIdle();
  }

  /** Acts on the peer having answered again: reconnects now instead of after gRPC's backoff. */
  public void peerUp() {
    down = false;
    channel.resetConnectBackoff();
  }

  /** Returns the number of forwarding calls (batches and items sent alone) sent. */
  public long batchesSent() {
    return batchesSent.get();
  }

  /** Returns the number of items the forwarding calls carried. */
  public long itemsSent() {
    return itemsSent.get();
  }

  /** Sends what is queued, then shuts the channel down; calls in flight finish. */
  @Override
  public void close() {
    batcher.close();
    quotaBatcher.close();
    stream.close();
    channel.shutdown();
  }

  /**
   * Closes the client of a peer that left the ring: queued forwarded items are not sent but fail with
   * a {@link PeerException}, so the request path routes them again on the new ring; calls in flight
   * finish.
   */
  public void abandon() {
    abandon("left the ring");
  }

  /**
   * Closes this client as {@link #abandon()} does, the queued items failing with "peer '…' {@code
   * why} before …".
   */
  public void abandon(String why) {
    batcher.abandon(
        new PeerException(
            address,
            "peer '" + address + "' " + why + " before the forwarded item was sent",
            null));
    quotaBatcher.abandon(
        new PeerException(
            address, "peer '" + address + "' " + why + " before the quota usage was sent", null));
    stream.close();
    channel.shutdown();
  }

  /** What of a call's outcome reaches the observer. */
  private enum Reporting {
    /** Successes and failures. */
    CALL,
    /** Successes only: announcements are best effort, peers starting together miss each other. */
    NOTICE,
    /** A success as a probe's, failures as any call's. */
    PROBE,
    /** A success as a probe's, failures not at all. */
    CONFIRM,
    /** Successes, and failures to reach this peer at all ({@code UNAVAILABLE}). */
    RELAY,
    /**
     * Successes and failures, except this peer's answer that it is not serving: a probe another
     * node relays through this one gets it from a peer that still drains the calls in flight to it.
     */
    ONWARD,
    /**
     * Successes and failures, except the peer's answer that it keeps nothing of what was asked
     * ({@code FAILED_PRECONDITION}): that peer answered.
     */
    ASK
  }

  private <T> CompletableFuture<T> wrap(CompletableFuture<T> call, String what) {
    return wrap(call, what, Reporting.CALL);
  }

  private <T> CompletableFuture<T> wrap(
      CompletableFuture<T> call, String what, Reporting reporting) {
    return wrap(call, what, reporting, null, 0);
  }

  // The observer hears the outcome before the caller does, so a retry sees the ring it changed;
  // a relay to target, sent at sent (the clock's monotonic reading), refused as target left
  // reports target as left.
  private <T> CompletableFuture<T> wrap(
      CompletableFuture<T> call, String what, Reporting reporting, String target, long sent) {
    CompletableFuture<T> out = new CompletableFuture<>();
    call.whenComplete(
        (value, error) -> {
          if (error == null) {
            try {
              if (reporting == Reporting.PROBE || reporting == Reporting.CONFIRM) {
                observer.probeAnswered(address);
              } else {
                observer.answered(address);
              }
            } finally {
              out.complete(value);
            }
            return;
          }
          Status s = Status.fromThrowable(error);
          String detail =
              s.getCode() + (s.getDescription() == null ? "" : ": " + s.getDescription());
          String message = "error while " + what + " peer '" + address + "': " + detail;
          try {
            if (reporting == Reporting.RELAY) {
              if (s.getCode() == Status.Code.UNAVAILABLE) {
                observer.notAnswering(address, message, true);
              } else if (target != null && UnsentRelay.targetLeft(error)) {
                observer.relayTargetLeft(address, target, sent);
              }
            } else if (reporting == Reporting.ONWARD) {
              if (!notServing(error)) {
                reportFailure(s, message);
              }
            } else if (reporting == Reporting.ASK
                && s.getCode() == Status.Code.FAILED_PRECONDITION) {
              observer.answered(address);
            } else if (reporting != Reporting.NOTICE && reporting != Reporting.CONFIRM) {
              reportFailure(s, message);
            }
          } finally {
            out.completeExceptionally(new PeerException(address, message, error));
          }
        });
    return out;
  }

  private void reportFailure(Status status, String message) {
    if (status.getCause() instanceof ForwardStream.Behind) {
      return; // not sent: the batches it would have waited behind count when they fail
    }
    switch (status.getCode()) {
      case CANCELLED -> {}
      case UNAVAILABLE -> observer.notAnswering(address, message, true);
      case DEADLINE_EXCEEDED ->
          observer.notAnswering(
              address,
              message,
              !(status.getCause() instanceof ForwardStream.Stalled)
                  && channel.getState(false) != ConnectivityState.READY);
      default -> observer.answeredWithError(address, message);
    }
  }

  // A failed attempt is reported with when it was read: the peer may come back (a probe answered
  // on a connection made since, a return notice) before the report arrives, which is then ignored
  // as stale. The state is then read once more: a later attempt may have failed too, and the
  // channel stays in TRANSIENT_FAILURE until a connection is ready, so no callback would tell of it.
  private void watchConnection(ConnectivityState seen) {
    long readAt = clock.monotonicNanos();
    ConnectivityState now = channel.getState(false);
    if (now == ConnectivityState.TRANSIENT_FAILURE && !reportFailedAttempt(readAt)) {
      long readAgainAt = clock.monotonicNanos();
      now = channel.getState(false);
      if (now == ConnectivityState.TRANSIENT_FAILURE) {
        reportFailedAttempt(readAgainAt);
      }
    }
    if (now == ConnectivityState.SHUTDOWN) {
      return;
    }
    if (now == ConnectivityState.IDLE && seen == ConnectivityState.READY) {
      channel.getState(true);
    }
    ConnectivityState watched = now;
    channel.notifyWhenStateChanged(watched, () -> watchConnection(watched));
  }

  // Returns whether the observer took the report: false when it ignored it as stale.
  private boolean reportFailedAttempt(long readAt) {
    return observer.unreachable(address, "cannot connect to peer '" + address + "'", readAt);
  }

  // A call raced with the peer going down (or copies to a returning peer) must fail fast, not wait.
  private PeersV1Grpc.PeersV1Stub dataStub() {
    return down ? stub : stub.withWaitForReady();
  }

  // Calls made while serving a peer's call must outlive it: they must not inherit its cancellation.
  // A call that starts while this client drops the connection (enterIdle) can be refused by gRPC
  // with IllegalStateException "Resolution is pending" before anything was sent (grpc-java resets
  // the channel's config selector on entering idle); started again, it waits for the resolution.
  private void detached(Runnable start) {
    Context.CancellableContext context = callContext.get();
    try {
      context.run(start);
    } catch (IllegalStateException racedWithIdle) {
      context.run(start);
    }
  }

  /** Returns an observer of a unary call that completes {@code future} with its answer. */
  private static <T> StreamObserver<T> observer(CompletableFuture<T> future) {
    return observer(future, null, null);
  }

  /**
   * Returns an interceptor that sets {@code streamMade} once a stream of the call is made on a
   * connection to the peer, before anything of the call can have been sent.
   */
  private static ClientInterceptor tracing(AtomicBoolean streamMade) {
    ClientStreamTracer.Factory factory =
        new ClientStreamTracer.Factory() {
          @Override
          public ClientStreamTracer newClientStreamTracer(
              ClientStreamTracer.StreamInfo info, Metadata headers) {
            return new ClientStreamTracer() {
              @Override
              public void streamCreated(Attributes transportAttrs, Metadata headers) {
                streamMade.set(true);
              }
            };
          }
        };
    return new ClientInterceptor() {
      @Override
      public <Q, R> ClientCall<Q, R> interceptCall(
          MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
        return next.newCall(method, options.withStreamTracerFactory(factory));
      }
    };
  }

  /**
   * Returns an observer of a unary call to {@code address} that completes {@code future} with its
   * answer; when {@code streamMade} is given and unset as the call fails, the failure is an {@link
   * UnsentCall}.
   */
  private static <T> StreamObserver<T> observer(
      CompletableFuture<T> future, String address, AtomicBoolean streamMade) {
    return new StreamObserver<>() {
      @Override
      public void onNext(T value) {
        future.complete(value);
      }

      @Override
      public void onError(Throwable t) {
        future.completeExceptionally(
            streamMade == null || streamMade.get() ? t : new UnsentCall(address, t));
      }

      @Override
      public void onCompleted() {
        if (!future.isDone()) {
          future.completeExceptionally(
              Status.INTERNAL.withDescription("no response").asRuntimeException());
        }
      }
    };
  }
}
