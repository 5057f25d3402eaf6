package dev.weir.client;

import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A client of a Weir (or Gubernator) cluster over {@code pb.gubernator.V1}: checks rate limits,
 * coalescing the checks made within a short window into one {@code GetRateLimits} call.
 *
 * <p>Requests and responses are the protocol's own {@link RateLimitReq} and {@link RateLimitResp}:
 * a check names its bucket ({@code name} + {@code unique_key}) and carries the limit's
 * configuration. A bad item is not an exception: its response says why in {@code error}. A failed
 * call completes every check it carried with a {@link WeirException}: {@link
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
 * Calls are not retried: a retried check could count its hits twice. The client is thread-safe;
 * futures complete on gRPC's threads.
 */
public final class WeirClient implements AutoCloseable {

  /** The batch window used unless {@link Builder#batchWindow} says otherwise: 500 µs. */
  public static final Duration DEFAULT_BATCH_WINDOW = Duration.ofNanos(500_000);

  /** The deadline of each call unless {@link Builder#deadline} says otherwise: 5 s. */
  public static final Duration DEFAULT_DEADLINE = Duration.ofSeconds(5);

  /** The most checks in one call, which is also the most a node accepts: 1000. */
  public static final int MAX_BATCH = 1000;

  private final List<ManagedChannel> channels;
  private final boolean ownsChannels;
  private final Duration deadline;
  private final BatchScheduler scheduler;
  private final CheckBatcher batcher;
  private final AtomicInteger next = new AtomicInteger();
  private final AtomicBoolean closed = new AtomicBoolean();

  private WeirClient(Builder builder) {
    this.ownsChannels = builder.channel == null;
    this.channels = ownsChannels ? openChannels(builder) : List.of(builder.channel);
    this.deadline = builder.deadline;
    this.scheduler = builder.scheduler == null ? new ExecutorBatchScheduler() : builder.scheduler;
    this.batcher = new CheckBatcher(builder.batchWindow, builder.maxBatch, scheduler, this::send);
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
    batcher.add(List.of(new CheckBatcher.Pending(request, response)));
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
    for (RateLimitReq request : requests) {
      Objects.requireNonNull(request, "request");
      items.add(new CheckBatcher.Pending(request, new CompletableFuture<>()));
    }
    batcher.add(items);
    CompletableFuture<?>[] futures =
        items.stream().map(CheckBatcher.Pending::response).toArray(CompletableFuture<?>[]::new);
    return CompletableFuture.allOf(futures)
        .thenApply(done -> items.stream().map(p -> p.response().join()).toList());
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
   * Sends the queued checks, stops the batch timer and shuts down the channels this client opened
   * (calls in flight complete; a caller-provided channel stays open). Later checks fail with {@link
   * IllegalStateException}. Calling it again does nothing.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    batcher.flush();
    scheduler.close();
    if (ownsChannels) {
      channels.forEach(ManagedChannel::shutdown);
    }
  }

  private CompletableFuture<List<RateLimitResp>> send(List<RateLimitReq> requests) {
    ManagedChannel channel = nextChannel();
    String target = channel.authority();
    CompletableFuture<GetRateLimitsResp> call = new CompletableFuture<>();
    V1Grpc.newStub(channel)
        .withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS)
        .getRateLimits(
            GetRateLimitsReq.newBuilder().addAllRequests(requests).build(), observer(call, target));
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

  private static List<ManagedChannel> openChannels(Builder builder) {
    List<ManagedChannel> opened = new ArrayList<>();
    for (String target : builder.targets) {
      NettyChannelBuilder channel = NettyChannelBuilder.forTarget(target);
      if (builder.tls) {
        channel.useTransportSecurity();
      } else {
        channel.usePlaintext();
      }
      opened.add(channel.build());
    }
    return List.copyOf(opened);
  }

  /** Configures and builds a {@link WeirClient}. */
  public static final class Builder {
    private final List<String> targets = new ArrayList<>();
    private ManagedChannel channel;
    private boolean tls;
    private Duration deadline = DEFAULT_DEADLINE;
    private Duration batchWindow = DEFAULT_BATCH_WINDOW;
    private int maxBatch = MAX_BATCH;
    private BatchScheduler scheduler;

    private Builder() {}

    /**
     * Adds a node to call, as {@code host:port} or any grpc-java target ({@code dns:///weir:1051}).
     * The client opens and owns one channel per target.
     */
    public Builder target(String target) {
      Objects.requireNonNull(target, "target");
      if (target.isBlank()) {
        throw new IllegalArgumentException("target must be host:port or a gRPC target, got \"\"");
      }
      targets.add(target);
      return this;
    }

    /** Adds every one of {@code addresses} as a {@link #target}. */
    public Builder targets(List<String> addresses) {
      addresses.forEach(this::target);
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
     * Sets the deadline of each call, from when it is sent; more than zero (default 5 s; lower it
     * where a slow answer is worse than none).
     */
    public Builder deadline(Duration value) {
      if (value.isNegative() || value.isZero()) {
        throw new IllegalArgumentException("deadline must be more than zero, got " + value);
      }
      this.deadline = value;
      return this;
    }

    /**
     * Sets how long the first queued check waits for others to share its call (default 500 µs);
     * zero sends each {@code check} or {@code checkAll} in a call of its own, at once.
     */
    public Builder batchWindow(Duration value) {
      if (value.isNegative()) {
        throw new IllegalArgumentException("batchWindow must be zero or more, got " + value);
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

    Builder scheduler(BatchScheduler value) {
      this.scheduler = value;
      return this;
    }

    /** Builds the client, opening its channels (connections are made on first use). */
    public WeirClient build() {
      if (channel == null && targets.isEmpty()) {
        throw new IllegalStateException("WeirClient needs a target (host:port) or a channel");
      }
      if (channel != null && !targets.isEmpty()) {
        throw new IllegalStateException(
            "WeirClient takes targets or a channel, not both; got targets " + targets);
      }
      return new WeirClient(this);
    }
  }
}
