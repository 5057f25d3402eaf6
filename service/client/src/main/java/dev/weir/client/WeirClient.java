package dev.weir.client;

import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.V1Grpc;
import dev.weir.proto.ring.GetRingReq;
import dev.weir.proto.ring.GetRingResp;
import dev.weir.proto.ring.RingGrpc;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * A client of a Weir (or Gubernator) cluster over {@code pb.gubernator.V1}: checks rate limits,
 * coalescing the checks made within a short window into one {@code GetRateLimits} call.
 *
 * <p>Requests and responses are the protocol's own {@link RateLimitReq} and {@link RateLimitResp}:
 * a check names its bucket ({@code name} + {@code unique_key}) and carries the limit's
 * configuration. A bad item is not an exception: its response says why in {@code error} (one whose
 * {@code name} or {@code unique_key} holds an unpaired surrogate, which protobuf would send as
 * {@code ?} into another key's bucket, is answered so without being sent). A failed call
 * completes every check it carried with a {@link WeirException}: {@link
 * WeirUnavailableException} when no node could be reached, {@link WeirDeadlineExceededException}
 * past the deadline, {@link WeirInvalidRequestException} when the node rejected the call.
 *
 * <p>A method that admits one request of an account under 100 per second:
 *
 * <pre>{@code
 * try (WeirClient client = WeirClient.builder().target(address).build()) {
 *   RateLimitReq request =
 *       RateLimitReq.newBuilder()
 *           .setName("requests_per_sec")
 *           .setUniqueKey("account:" + accountId)
 *           .setHits(1)
 *           .setLimit(100)
 *           .setDuration(1000)
 *           .build();
 *   RateLimitResp response = client.check(request).join();
 *   return response.getStatus() == Status.UNDER_LIMIT;
 * }
 * }</pre>
 *
 * <p>With several targets, each call goes to the next one in turn (any node answers for any key).
 * With {@link Builder#sendToOwners()}, the client asks a target for the cluster's ring ({@code
 * weir.v1.Ring/GetRing}) and sends each check to the node that owns its key, so that no node has to
 * forward it; it asks again every {@link Builder#ringRefresh} and when an owner cannot be reached
 * or does not answer within the deadline.
 * A call that may have reached a node is not retried: a retried check could count its hits twice
 * (a check to an owner that certainly did not count it goes to the targets instead, see {@link
 * Builder#sendToOwners()}). The client is thread-safe;
 * futures complete on gRPC's threads.
 */
public final class WeirClient implements AutoCloseable {

  /** The batch window used unless {@link Builder#batchWindow} says otherwise: 500 µs. */
  public static final Duration DEFAULT_BATCH_WINDOW = Duration.ofNanos(500_000);

  /** The deadline of each call unless {@link Builder#deadline} says otherwise: 5 s. */
  public static final Duration DEFAULT_DEADLINE = Duration.ofSeconds(5);

  /** The most checks in one call, which is also the most a node accepts: 1000. */
  public static final int MAX_BATCH = 1000;

  /**
   * The most bytes of checks one call carries unless {@link Builder#maxBatchBytes} says otherwise:
   * 1 MiB, the largest message Gubernator's server accepts (Weir's accepts 4 MiB unless {@code
   * WEIR_GRPC_MAX_MESSAGE_SIZE} says otherwise).
   */
  public static final int DEFAULT_MAX_BATCH_BYTES = 1 << 20;

  /** The least {@link Builder#maxBatchBytes}: 64 KiB, as {@code WEIR_GRPC_MAX_MESSAGE_SIZE}'s. */
  private static final int MIN_MAX_BATCH_BYTES = 64 << 10;

  /** The most {@link Builder#maxBatchBytes}: 64 MiB, as {@code WEIR_GRPC_MAX_MESSAGE_SIZE}'s. */
  private static final int MAX_MAX_BATCH_BYTES = 64 << 20;

  /** How often a client that sends to owners asks for the ring unless told otherwise: 10 s. */
  public static final Duration DEFAULT_RING_REFRESH = Duration.ofSeconds(10);

  /** The longest {@link Builder#deadline}: 1 day. */
  public static final Duration MAX_DEADLINE = Duration.ofDays(1);

  /** The longest {@link Builder#ringRefresh}: 1 day. */
  public static final Duration MAX_RING_REFRESH = Duration.ofDays(1);

  /** The longest {@link Builder#batchWindow}: 1 s. */
  public static final Duration MAX_BATCH_WINDOW = Duration.ofSeconds(1);

  private final List<ManagedChannel> channels;
  private final boolean ownsChannels;
  private final Duration deadline;
  private final BatchScheduler scheduler;
  private final CheckBatcher batcher;
  private final OwnerRoutes owners;
  private final Duration ringRefresh;
  private final AtomicInteger next = new AtomicInteger();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final AtomicBoolean refreshing = new AtomicBoolean();
  private final Object ringAskLock = new Object();

  /** How many ring asks have started; guarded by {@link #ringAskLock}. */
  private long ringAsks;
  private final Uses targetUsers = new Uses();

  /**
   * The least time between two asks for the ring that calls failing at their owner start, so that
   * an owner down for long does not have every failed call ask again.
   */
  static final Duration RING_ASK_PAUSE = Duration.ofSeconds(1);
  private final Object timerLock = new Object();
  private BatchScheduler.Task refreshTimer;

  private WeirClient(Builder builder) {
    this.ownsChannels = builder.channel == null;
    this.channels = ownsChannels ? openAll(builder) : List.of(builder.channel);
    this.deadline = builder.deadline;
    this.scheduler = builder.scheduler == null ? new ExecutorBatchScheduler() : builder.scheduler;
    this.batcher =
        new CheckBatcher(
            builder.batchWindow,
            builder.maxBatch,
            builder.maxBatchBytes,
            scheduler,
            requests -> send(nextChannel(), requests, null));
    this.ringRefresh = builder.ringRefresh;
    if (builder.sendToOwners) {
      boolean tls = builder.tls;
      Duration batchWindow = builder.batchWindow;
      int maxBatch = builder.maxBatch;
      int maxBatchBytes = builder.maxBatchBytes;
      Function<String, ManagedChannel> open =
          builder.memberChannels == null
              ? member -> Builder.open(member, tls)
              : builder.memberChannels;
      this.owners =
          new OwnerRoutes(
              open,
              (member, channel) ->
                  new CheckBatcher(
                      batchWindow,
                      maxBatch,
                      maxBatchBytes,
                      scheduler,
                      requests -> sendToOwner(member, channel, requests)));
      try {
        refreshRing().whenComplete((done, failure) -> scheduleRefresh());
      } catch (RuntimeException | Error e) {
        close();
        throw e;
      }
    } else {
      this.owners = null;
    }
  }

  /** Opens a channel to each target, shutting down those opened when one cannot be. */
  private static List<ManagedChannel> openAll(Builder builder) {
    List<ManagedChannel> opened = new ArrayList<>();
    try {
      for (String target : builder.targets) {
        opened.add(builder.targetChannels.apply(target));
      }
    } catch (RuntimeException | Error e) {
      opened.forEach(ManagedChannel::shutdownNow);
      throw e;
    }
    return List.copyOf(opened);
  }

  /** Returns a builder; give it a {@link Builder#target} or a {@link Builder#channel}. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Checks {@code request}: completes with its response, or with a {@link WeirException} when the
   * call that carried it failed.
   */
  public CompletableFuture<RateLimitResp> check(RateLimitReq request) {
    Objects.requireNonNull(request, "request");
    CompletableFuture<RateLimitResp> response = new CompletableFuture<>();
    if (closed.get()) {
      response.completeExceptionally(new IllegalStateException("the WeirClient is closed"));
      return response;
    }
    RateLimitResp refused = ItemText.refusal(request);
    if (refused != null) {
      response.complete(refused);
      return response;
    }
    batcherFor(request).add(List.of(new CheckBatcher.Pending(request, response)));
    return response;
  }

  /**
   * Checks every request: completes with their responses in the same order, or with the first
   * failure. Requests are queued together, so up to {@link #MAX_BATCH} of them share one call.
   */
  public CompletableFuture<List<RateLimitResp>> checkAll(List<RateLimitReq> requests) {
    if (closed.get()) {
      return CompletableFuture.failedFuture(new IllegalStateException("the WeirClient is closed"));
    }
    List<CheckBatcher.Pending> items = new ArrayList<>(requests.size());
    Map<CheckBatcher, List<CheckBatcher.Pending>> byBatcher = new IdentityHashMap<>();
    for (RateLimitReq request : requests) {
      Objects.requireNonNull(request, "request");
      CheckBatcher.Pending item = new CheckBatcher.Pending(request, new CompletableFuture<>());
      items.add(item);
      RateLimitResp refused = ItemText.refusal(request);
      if (refused != null) {
        item.response().complete(refused);
      } else {
        byBatcher.computeIfAbsent(batcherFor(request), b -> new ArrayList<>()).add(item);
      }
    }
    byBatcher.forEach(CheckBatcher::add);
    CompletableFuture<?>[] futures =
        items.stream().map(CheckBatcher.Pending::response).toArray(CompletableFuture<?>[]::new);
    CompletableFuture<List<RateLimitResp>> all = new CompletableFuture<>();
    CompletableFuture.allOf(futures)
        .whenComplete(
            (done, failure) -> {
              if (failure == null) {
                all.complete(items.stream().map(p -> p.response().join()).toList());
              } else {
                all.completeExceptionally(WeirException.unwrapped(failure));
              }
            });
    return all;
  }

  /**
   * Asks the next target for the cluster's ring and sends each later check to the member that owns
   * its key. Completes when the ring is in use, or a ring answered to a later ask is (asks answered
   * out of order never bring back an older ring); fails with a {@link WeirException} when the call
   * fails (a Gubernator node answers {@code UNIMPLEMENTED}) or the answer is not a usable ring, and
   * the client then sends as before. A client built with {@link Builder#sendToOwners()} calls this
   * itself; call it to pick up a change of the cluster at once. The call, whose ring every later
   * check uses, is not bound to the caller's gRPC {@link Context} (only to {@link
   * Builder#deadline}).
   *
   * @throws IllegalStateException when the client was not built with {@link
   *     Builder#sendToOwners()}
   */
  public CompletableFuture<Void> refreshRing() {
    if (owners == null) {
      throw new IllegalStateException("refreshRing needs a client built with sendToOwners()");
    }
    ManagedChannel channel = nextChannel();
    String target = channel.authority();
    CompletableFuture<GetRingResp> call = new CompletableFuture<>();
    RingGrpc.RingStub stub =
        RingGrpc.newStub(channel).withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS);
    AtomicLong ask = new AtomicLong();
    synchronized (ringAskLock) {
      ask.set(++ringAsks);
      runDetached(() -> stub.getRing(GetRingReq.getDefaultInstance(), observer(call, target)));
    }
    return call.thenAccept(
        answer -> {
          try {
            owners.apply(answer, ask.get());
          } catch (IllegalArgumentException e) {
            throw new WeirException(
                Status.Code.INTERNAL,
                target,
                "GetRing from " + target + " answered a ring this client cannot use: "
                    + e.getMessage(),
                e);
          }
        });
  }

  /**
   * Returns the addresses of the nodes checks are sent to by key, sorted: the ring's members, or
   * none while the client sends to its targets in turn.
   */
  public List<String> ringMembers() {
    return owners == null ? List.of() : owners.members();
  }

  /** Asks the next target for its health: its status, peer count and advertised address. */
  public CompletableFuture<HealthCheckResp> health() {
    ManagedChannel channel = nextChannel();
    CompletableFuture<HealthCheckResp> result = new CompletableFuture<>();
    V1Grpc.newStub(channel)
        .withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS)
        .healthCheck(HealthCheckReq.getDefaultInstance(), observer(result, channel.authority()));
    return result;
  }

  /**
   * Sends the queued checks, stops the batch timers and shuts down the channels this client opened
   * once each batch timer's call, when it is being sent, has started, and the target channels once
   * each owner call started before (which may be sent again through them) has been answered or
   * failed (calls in flight complete; a caller-provided channel stays open). Later checks fail
   * with {@link IllegalStateException}. Calling it again does nothing.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    synchronized (timerLock) {
      if (refreshTimer != null) {
        refreshTimer.cancel();
      }
    }
    targetUsers.hold();
    batcher.close();
    List<CheckBatcher> batchers = new ArrayList<>();
    batchers.add(batcher);
    if (owners != null) {
      batchers.addAll(owners.close());
    }
    scheduler.close();
    if (ownsChannels) {
      for (CheckBatcher b : batchers) {
        targetUsers.hold();
        b.whenIdle(targetUsers::release);
      }
      targetUsers.whenNoneLeft(() -> channels.forEach(ManagedChannel::shutdown));
    }
    targetUsers.release();
  }

  /** Returns the batcher that sends {@code request}: its owner's, else the targets'. */
  CheckBatcher batcherFor(RateLimitReq request) {
    CheckBatcher owner = owners == null ? null : owners.batcherFor(request);
    return owner == null ? batcher : owner;
  }

  /** Asks for the ring again after {@link Builder#ringRefresh}, unless closed. */
  private void scheduleRefresh() {
    synchronized (timerLock) {
      if (!closed.get()) {
        refreshTimer =
            scheduler.schedule(
                () -> askRing().whenComplete((done, failure) -> scheduleRefresh()),
                ringRefresh);
      }
    }
  }

  /**
   * Sends {@code requests} to {@code member} on {@code channel}; when it cannot be reached ({@code
   * UNAVAILABLE}) or does not answer within the deadline ({@code DEADLINE_EXCEEDED}: a member gone
   * without refusing connections), asks for the ring at once (one such call at a time, at most
   * once a {@link #RING_ASK_PAUSE}), since the cluster may have dropped it. The checks go again
   * through the targets, which forward them, when the member certainly did not count them: it does
   * not serve checks ({@code UNIMPLEMENTED}: an embedded member whose server lacks the V1 service,
   * whose later checks then go that way too), or the call failed {@code UNAVAILABLE} before it got
   * a stream on a connected transport ({@link StreamOpened}: the connection was refused or its TLS
   * handshake failed, as against a peer listener that requires client certificates). A call that
   * failed after it was sent is not sent again, whatever its status.
   */
  private CompletableFuture<List<RateLimitResp>> sendToOwner(
      String member, ManagedChannel channel, List<RateLimitReq> requests) {
    StreamOpened opened = new StreamOpened();
    targetUsers.hold();
    CompletableFuture<List<RateLimitResp>> call;
    try {
      call = send(channel, requests, opened);
    } catch (RuntimeException | Error e) {
      targetUsers.release();
      throw e;
    }
    return call.<CompletableFuture<List<RateLimitResp>>>handle(
            (responses, failure) -> {
              try {
                return failure == null
                    ? CompletableFuture.completedFuture(responses)
                    : afterOwnerFailed(member, requests, opened, failure);
              } finally {
                targetUsers.release();
              }
            })
        .thenCompose(sent -> sent);
  }

  /**
   * Returns the checks' call through the targets when the owner's {@code failure} shows it
   * certainly did not count them, else that failure ({@link #sendToOwner}).
   */
  private CompletableFuture<List<RateLimitResp>> afterOwnerFailed(
      String member, List<RateLimitReq> requests, StreamOpened opened, Throwable failure) {
    Throwable cause = WeirException.unwrapped(failure);
    if (cause instanceof WeirUnavailableException
        || cause instanceof WeirDeadlineExceededException) {
      askForTheRing();
    }
    if (cause instanceof WeirException e
        && e.code() == Status.Code.UNIMPLEMENTED
        && owners != null) {
      owners.sendThroughTargets(member);
      return send(nextChannel(), requests, null);
    }
    if (cause instanceof WeirUnavailableException && !opened.opened()) {
      return send(nextChannel(), requests, null);
    }
    return CompletableFuture.failedFuture(cause);
  }

  /** Asks for the ring now unless an ask is in flight or was made within the pause, or closed. */
  private void askForTheRing() {
    if (!closed.get() && refreshing.compareAndSet(false, true)) {
      askRing().whenComplete((done, error) -> allowAskingAfterAPause());
    }
  }

  /**
   * Returns {@link #refreshRing()}'s future, or one failed with what it threw (a client interceptor
   * of the given channel may throw), so that the timer and the asks after a failure go on.
   */
  private CompletableFuture<Void> askRing() {
    try {
      return refreshRing();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  // An owner down for long keeps failing calls at once: ask for the ring at most once a pause.
  private void allowAskingAfterAPause() {
    try {
      scheduler.schedule(() -> refreshing.set(false), RING_ASK_PAUSE);
    } catch (RuntimeException closing) {
      refreshing.set(false);
    }
  }

  /**
   * Sends {@code requests} in one call on {@code channel}, marking {@code opened} (when not null)
   * once the call got a stream. The call is not bound to the sending thread's gRPC {@link Context}
   * (only to {@link Builder#deadline}): a batch carries other callers' checks, so the cancellation
   * or deadline of the caller whose check filled it must not fail theirs.
   */
  private CompletableFuture<List<RateLimitResp>> send(
      ManagedChannel channel, List<RateLimitReq> requests, StreamOpened opened) {
    String target = channel.authority();
    CompletableFuture<GetRateLimitsResp> call = new CompletableFuture<>();
    V1Grpc.V1Stub stub =
        V1Grpc.newStub(channel).withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS);
    V1Grpc.V1Stub sending = opened == null ? stub : stub.withInterceptors(opened);
    runDetached(
        () ->
            sending.getRateLimits(
                GetRateLimitsReq.newBuilder().addAllRequests(requests).build(),
                observer(call, target)));
    return call.thenApply(
        response -> {
          if (response.getResponsesCount() != requests.size()) {
            throw new WeirException(
                Status.Code.INTERNAL,
                target,
                "GetRateLimits to "
                    + target
                    + " answered "
                    + response.getResponsesCount()
                    + " responses to "
                    + requests.size()
                    + " requests; expected one per request",
                null);
          }
          return response.getResponsesList();
        });
  }

  /**
   * Runs {@code call} in a fork of the current gRPC {@link Context}: with its values, without its
   * deadline and cancellation, so that the call it starts outlives the caller.
   */
  private static void runDetached(Runnable call) {
    Context.current().fork().run(call);
  }

  private ManagedChannel nextChannel() {
    return channels.get(Math.floorMod(next.getAndIncrement(), channels.size()));
  }

  private static <T> StreamObserver<T> observer(CompletableFuture<T> result, String target) {
    return new StreamObserver<>() {
      @Override
      public void onNext(T value) {
        result.complete(value);
      }

      @Override
      public void onError(Throwable t) {
        result.completeExceptionally(WeirException.of(t, target));
      }

      @Override
      public void onCompleted() {
        if (!result.isDone()) {
          result.completeExceptionally(
              new WeirException(
                  Status.Code.INTERNAL,
                  target,
                  "call to " + target + " ended without a response",
                  null));
        }
      }
    };
  }

  /** Configures and builds a {@link WeirClient}. */
  public static final class Builder {
    private final List<String> targets = new ArrayList<>();
    private ManagedChannel channel;
    private boolean tls;
    private Duration deadline = DEFAULT_DEADLINE;
    private Duration batchWindow = DEFAULT_BATCH_WINDOW;
    private int maxBatch = MAX_BATCH;
    private int maxBatchBytes = DEFAULT_MAX_BATCH_BYTES;
    private BatchScheduler scheduler;
    private boolean sendToOwners;
    private Duration ringRefresh = DEFAULT_RING_REFRESH;
    private Function<String, ManagedChannel> memberChannels;
    private Function<String, ManagedChannel> targetChannels = target -> open(target, tls);

    private Builder() {}

    /** Opens a channel to {@code target}, with TLS when {@code tls}, else plaintext. */
    private static ManagedChannel open(String target, boolean tls) {
      NettyChannelBuilder channel = NettyChannelBuilder.forTarget(target);
      if (tls) {
        channel.useTransportSecurity();
      } else {
        channel.usePlaintext();
      }
      return channel.build();
    }

    /**
     * Adds a node to call, as {@code host:port} or any grpc-java target ({@code dns:///weir:1051}).
     * The client opens and owns one channel per target.
     */
    public Builder target(String target) {
      targets.add(checkedTarget(target));
      return this;
    }

    /** Returns {@code target}, refusing null and blank. */
    private static String checkedTarget(String target) {
      Objects.requireNonNull(target, "target");
      if (target.isBlank()) {
        throw new IllegalArgumentException(
            "target must be host:port or a gRPC target, got \"" + target + "\"");
      }
      return target;
    }

    /**
     * Adds every one of {@code addresses} as a {@link #target}, or none when one of them is null or
     * blank.
     */
    public Builder targets(List<String> addresses) {
      List<String> checked = new ArrayList<>(addresses.size());
      for (String address : addresses) {
        checked.add(checkedTarget(address));
      }
      targets.addAll(checked);
      return this;
    }

    /**
     * Calls over {@code existing} instead of opening channels; the caller keeps owning it, so
     * {@link WeirClient#close} leaves it open. Excludes {@link #target}.
     */
    public Builder channel(ManagedChannel existing) {
      this.channel = Objects.requireNonNull(existing, "channel");
      return this;
    }

    /** Opens the target channels without TLS (the default). */
    public Builder usePlaintext() {
      this.tls = false;
      return this;
    }

    /** Opens the target channels with TLS, trusting the JVM's default certificate authorities. */
    public Builder useTransportSecurity() {
      this.tls = true;
      return this;
    }

    /**
     * Sets the deadline of each call, from when it is sent; more than zero and at most 1 day
     * (default 5 s; lower it where a slow answer is worse than none).
     */
    public Builder deadline(Duration value) {
      this.deadline = positiveAtMost("deadline", value, MAX_DEADLINE);
      return this;
    }

    /**
     * Sets how long the first queued check waits for others to share its call, zero to 1 s
     * (default 500 µs); zero sends each {@code check} or {@code checkAll} in a call of its own, at
     * once.
     */
    public Builder batchWindow(Duration value) {
      Objects.requireNonNull(value, "batchWindow");
      if (value.isNegative() || value.compareTo(MAX_BATCH_WINDOW) > 0) {
        throw new IllegalArgumentException(
            "batchWindow must be zero or more and at most " + MAX_BATCH_WINDOW + ", got " + value);
      }
      this.batchWindow = value;
      return this;
    }

    /** Sets the most checks in one call, 1..1000 (default 1000); a full batch is sent at once. */
    public Builder maxBatch(int value) {
      if (value < 1 || value > MAX_BATCH) {
        throw new IllegalArgumentException("maxBatch must be within 1..1000, got " + value);
      }
      this.maxBatch = value;
      return this;
    }

    /**
     * Sets the most bytes of checks in one call, 65536..67108864 (64 KiB to 64 MiB, default 1 MiB);
     * it must not exceed the nodes' message limit ({@code WEIR_GRPC_MAX_MESSAGE_SIZE}, 1 MiB on
     * Gubernator). A batch that reaches it is sent at once, a check that would take a batch over it
     * goes in the next call, and a check larger than it in a call of its own, so that a check too
     * large for the node fails alone instead of failing the checks batched with it.
     */
    public Builder maxBatchBytes(int value) {
      if (value < MIN_MAX_BATCH_BYTES || value > MAX_MAX_BATCH_BYTES) {
        throw new IllegalArgumentException(
            "maxBatchBytes must be within "
                + MIN_MAX_BATCH_BYTES
                + ".."
                + MAX_MAX_BATCH_BYTES
                + " (64 KiB to 64 MiB, at most the nodes' message limit), got "
                + value);
      }
      this.maxBatchBytes = value;
      return this;
    }

    /**
     * Sends each check straight to the node that owns its key, as the ring a target answers ({@code
     * weir.v1.Ring/GetRing}) names it, instead of to the targets in turn: the cluster then decides
     * it without a hop between nodes. The client opens a channel to each member's advertised
     * address (with this builder's transport security, or with {@link #memberChannels}, which a
     * client built on a {@link #channel} needs), so use it only where the client reaches every
     * node at that address. Until a target has answered the ring, and against nodes without that
     * service (Gubernator), checks go to the targets as without this setting. A check its owner
     * certainly did not count (the owner does not serve checks, or the connection to it failed
     * before the call was sent) goes again through the targets, which forward it.
     */
    public Builder sendToOwners() {
      this.sendToOwners = true;
      return this;
    }

    /**
     * Sets how often a client that {@linkplain #sendToOwners() sends to owners} asks for the ring;
     * more than zero and at most 1 day (default 10 s). A member that cannot be reached makes it ask
     * at once.
     */
    public Builder ringRefresh(Duration value) {
      this.ringRefresh = positiveAtMost("ringRefresh", value, MAX_RING_REFRESH);
      return this;
    }

    /**
     * Returns {@code value} when it is more than zero and at most {@code most}, else refuses it
     * naming {@code setting}.
     */
    private static Duration positiveAtMost(String setting, Duration value, Duration most) {
      Objects.requireNonNull(value, setting);
      if (value.isNegative() || value.isZero() || value.compareTo(most) > 0) {
        throw new IllegalArgumentException(
            setting + " must be more than zero and at most " + most + ", got " + value);
      }
      return value;
    }

    /**
     * Sets how a client that {@linkplain #sendToOwners() sends to owners} opens the channel to each
     * member of the ring: {@code open} is given the member's advertised {@code host:port} and
     * returns a channel configured as the caller's {@link #channel} is (its trusted CAs, client
     * certificate, interceptors). Without it, member channels are opened as target channels are
     * ({@link #usePlaintext}, {@link #useTransportSecurity}); with {@link #channel} it is required.
     * The client owns the channels it opens: it shuts one down when its member leaves the ring and
     * all of them on {@link WeirClient#close}.
     */
    public Builder memberChannels(Function<String, ManagedChannel> open) {
      this.memberChannels = Objects.requireNonNull(open, "memberChannels");
      return this;
    }

    /** Opens target channels with {@code open} instead of by this builder's settings (tests). */
    Builder targetChannels(Function<String, ManagedChannel> open) {
      this.targetChannels = open;
      return this;
    }

    Builder scheduler(BatchScheduler value) {
      this.scheduler = value;
      return this;
    }

    /**
     * Builds the client, opening its channels (connections are made on first use). The client
     * keeps this builder's settings as they are now: changing the builder later changes only the
     * clients it builds after.
     */
    public WeirClient build() {
      if (channel == null && targets.isEmpty()) {
        throw new IllegalStateException("WeirClient needs a target (host:port) or a channel");
      }
      if (channel != null && !targets.isEmpty()) {
        throw new IllegalStateException(
            "WeirClient takes targets or a channel, not both; got targets " + targets);
      }
      if (sendToOwners && channel != null && memberChannels == null) {
        throw new IllegalStateException(
            "sendToOwners() with channel(...) needs memberChannels(...): the client opens a"
                + " channel to each ring member and cannot copy the given channel's settings (TLS"
                + " trust, client certificate, interceptors), so name how, e.g. memberChannels("
                + "address -> NettyChannelBuilder.forTarget(address).sslContext(yours).build())");
      }
      if (memberChannels != null && !sendToOwners) {
        throw new IllegalStateException(
            "memberChannels(...) needs sendToOwners(): only a client that sends to owners opens"
                + " channels to the ring's members");
      }
      return new WeirClient(this);
    }
  }

  /**
   * A count of the users of the target channels that may still start a call on them, with the
   * action to run once the count falls to zero: a batcher whose taken batch has not started its
   * call, and an owner call that may be sent again through the targets until its answer or
   * failure is handled (bounded by the call's deadline).
   */
  private static final class Uses {
    private int held;
    private Runnable whenNoneLeft;

    synchronized void hold() {
      held++;
    }

    void release() {
      Runnable due;
      synchronized (this) {
        held--;
        if (held > 0 || whenNoneLeft == null) {
          return;
        }
        due = whenNoneLeft;
        whenNoneLeft = null;
      }
      due.run();
    }

    /** Runs {@code action} once the count falls to zero; the caller holds a use until then. */
    synchronized void whenNoneLeft(Runnable action) {
      whenNoneLeft = action;
    }
  }
}
