package dev.weir.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.GetRateLimitsResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class WeirClientTest {

  private final List<Server> servers = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private static final Duration GENEROUS = Duration.ofSeconds(30);

  private final FakeBatchScheduler scheduler = new FakeBatchScheduler();

  @AfterEach
  void stop() {
    channels.forEach(ManagedChannel::shutdownNow);
    servers.forEach(Server::shutdownNow);
  }

  /** Returns a check of one hit on {@code key} under 10 per second, as the client tests send. */
  static RateLimitReq item(String key) {
    return RateLimitReq.newBuilder()
        .setName("requests_per_sec")
        .setUniqueKey(key)
        .setHits(1)
        .setLimit(10)
        .setDuration(1000)
        .build();
  }

  private ManagedChannel inProcess(RecordingV1 service) throws Exception {
    String name = InProcessServerBuilder.generateName();
    servers.add(
        InProcessServerBuilder.forName(name).directExecutor().addService(service).build().start());
    ManagedChannel channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    channels.add(channel);
    return channel;
  }

  private String loopback(RecordingV1 service) throws Exception {
    return loopback(service, 4 << 20);
  }

  /**
   * Returns the address of {@code service} served on loopback, accepting messages of up to {@code
   * maxMessageBytes}.
   */
  private String loopback(RecordingV1 service, int maxMessageBytes) throws Exception {
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .maxInboundMessageSize(maxMessageBytes)
            .addService(service)
            .build()
            .start();
    servers.add(server);
    return "127.0.0.1:" + server.getPort();
  }

  private WeirClient.Builder inProcessClient(RecordingV1 service) throws Exception {
    return WeirClient.builder().channel(inProcess(service)).scheduler(scheduler).deadline(GENEROUS);
  }

  private static Throwable failureOf(CompletableFuture<?> future) {
    assertThatThrownBy(future::join).isInstanceOf(CompletionException.class);
    return future
        .handle(
            (value, failure) ->
                failure instanceof CompletionException ? failure.getCause() : failure)
        .join();
  }

  @Test
  void check_callsWithinTheWindow_areSentAsOneGetRateLimits() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    try (WeirClient client = inProcessClient(server).build()) {
      CompletableFuture<RateLimitResp> first = client.check(item("k1"));
      CompletableFuture<RateLimitResp> second = client.check(item("k2"));
      CompletableFuture<RateLimitResp> third = client.check(item("k3"));

      assertThat(server.callSizes()).isEmpty();
      assertThat(scheduler.waiting()).containsExactly(WeirClient.DEFAULT_BATCH_WINDOW);
      scheduler.runDue();

      assertThat(server.callSizes()).containsExactly(3);
      assertThat(first.join().getMetadataMap()).containsEntry("key", "k1");
      assertThat(second.join().getMetadataMap()).containsEntry("key", "k2");
      assertThat(third.join().getMetadataMap()).containsEntry("key", "k3");
      assertThat(third.join().getRemaining()).isEqualTo(9);
    }
  }

  @Test
  void check_afterAFlush_startsANewWindow() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    try (WeirClient client = inProcessClient(server).batchWindow(Duration.ofMillis(2)).build()) {
      client.check(item("k1"));
      scheduler.runDue();
      CompletableFuture<RateLimitResp> later = client.check(item("k2"));

      assertThat(scheduler.waiting()).containsExactly(Duration.ofMillis(2));
      scheduler.runDue();
      assertThat(server.callSizes()).containsExactly(1, 1);
      assertThat(later.join().getMetadataMap()).containsEntry("key", "k2");
    }
  }

  @Test
  void check_batchReachesMaxBatch_isSentWithoutWaiting() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    try (WeirClient client = inProcessClient(server).maxBatch(2).build()) {
      CompletableFuture<RateLimitResp> first = client.check(item("k1"));
      client.check(item("k2"));

      assertThat(server.callSizes()).containsExactly(2);
      assertThat(first).isCompleted();
      assertThat(scheduler.waiting()).isEmpty();

      CompletableFuture<RateLimitResp> third = client.check(item("k3"));
      assertThat(third).isNotDone();
      scheduler.runDue();
      assertThat(server.callSizes()).containsExactly(2, 1);
      assertThat(third.join().getMetadataMap()).containsEntry("key", "k3");
    }
  }

  /** A {@code V1} server that holds each {@code GetRateLimits} call until {@link #answerAll}. */
  private static final class HeldV1 extends V1Grpc.V1ImplBase {
    private final List<Runnable> answers = new CopyOnWriteArrayList<>();

    @Override
    public void getRateLimits(GetRateLimitsReq request, StreamObserver<GetRateLimitsResp> out) {
      answers.add(
          () -> {
            GetRateLimitsResp.Builder resp = GetRateLimitsResp.newBuilder();
            for (RateLimitReq item : request.getRequestsList()) {
              resp.addResponses(
                  RateLimitResp.newBuilder().putMetadata("key", item.getUniqueKey()));
            }
            out.onNext(resp.build());
            out.onCompleted();
          });
    }

    /** Answers every call held so far; one whose caller cancelled it is skipped. */
    void answerAll() {
      for (Runnable answer : answers) {
        try {
          answer.run();
        } catch (StatusRuntimeException cancelled) {
          // The client cancelled that call; nothing to answer.
        }
      }
    }
  }

  @Test
  void check_fillsTheBatchInACancelledContext_theOtherCallersChecksAreAnsweredAnyway()
      throws Exception {
    HeldV1 server = new HeldV1();
    String name = InProcessServerBuilder.generateName();
    servers.add(
        InProcessServerBuilder.forName(name).directExecutor().addService(server).build().start());
    ManagedChannel channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    channels.add(channel);
    try (WeirClient client =
        WeirClient.builder().channel(channel).scheduler(scheduler).maxBatch(2).build()) {
      CompletableFuture<RateLimitResp> queued = client.check(item("k1"));
      // The second caller is a gRPC handler whose own call is then cancelled (its client left).
      Context.CancellableContext handler = Context.current().withCancellation();
      CompletableFuture<RateLimitResp> filling = handler.call(() -> client.check(item("k2")));

      handler.cancel(null);
      server.answerAll();

      assertThat(queued).succeedsWithin(GENEROUS);
      assertThat(queued.join().getMetadataMap()).containsEntry("key", "k1");
      assertThat(filling.join().getMetadataMap()).containsEntry("key", "k2");
    }
  }

  @Test
  void check_zeroWindowFromAHandlerThatReturnsAtOnce_isStillAnswered() throws Exception {
    HeldV1 server = new HeldV1();
    String name = InProcessServerBuilder.generateName();
    servers.add(
        InProcessServerBuilder.forName(name).directExecutor().addService(server).build().start());
    ManagedChannel channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    channels.add(channel);
    try (WeirClient client =
        WeirClient.builder()
            .channel(channel)
            .scheduler(scheduler)
            .batchWindow(Duration.ZERO)
            .build()) {
      // A gRPC handler records a hit without waiting; its Context is cancelled when it answers.
      Context.CancellableContext handler = Context.current().withCancellation();
      CompletableFuture<RateLimitResp> recorded = handler.call(() -> client.check(item("k1")));

      handler.cancel(null);
      server.answerAll();

      assertThat(recorded).succeedsWithin(GENEROUS);
      assertThat(recorded.join().getMetadataMap()).containsEntry("key", "k1");
    }
  }

  @Test
  void check_zeroWindow_sendsEachCallAtOnce() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    try (WeirClient client = inProcessClient(server).batchWindow(Duration.ZERO).build()) {
      client.check(item("k1")).join();
      client.checkAll(List.of(item("k2"), item("k3"))).join();

      assertThat(server.callSizes()).containsExactly(1, 2);
      assertThat(scheduler.waiting()).isEmpty();
    }
  }

  @Test
  void checkAll_moreThanMaxBatch_splitsIntoFullCallsAndKeepsOrder() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    try (WeirClient client = inProcessClient(server).build()) {
      List<RateLimitReq> requests = IntStream.range(0, 2500).mapToObj(i -> item("k" + i)).toList();

      CompletableFuture<List<RateLimitResp>> responses = client.checkAll(requests);
      assertThat(server.callSizes()).containsExactly(1000, 1000);
      scheduler.runDue();

      assertThat(server.callSizes()).containsExactly(1000, 1000, 500);
      assertThat(responses.join())
          .extracting(r -> r.getMetadataMap().get("key"))
          .containsExactlyElementsOf(requests.stream().map(RateLimitReq::getUniqueKey).toList());
    }
  }

  @Test
  void checkAll_emptyList_completesEmptyWithoutACall() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    try (WeirClient client = inProcessClient(server).build()) {
      assertThat(client.checkAll(List.of()).join()).isEmpty();
      assertThat(scheduler.waiting()).isEmpty();
      assertThat(server.callSizes()).isEmpty();
    }
  }

  @Test
  void check_nodeNotListening_failsWithWeirUnavailableException() throws Exception {
    int closedPort;
    try (ServerSocket socket = new ServerSocket(0)) {
      closedPort = socket.getLocalPort();
    }
    try (WeirClient client =
        WeirClient.builder()
            .target("127.0.0.1:" + closedPort)
            .batchWindow(Duration.ZERO)
            .deadline(GENEROUS)
            .build()) {
      Throwable failure = failureOf(client.check(item("k1")));

      assertThat(failure).isInstanceOf(WeirUnavailableException.class);
      assertThat(((WeirException) failure).code()).isEqualTo(io.grpc.Status.Code.UNAVAILABLE);
      assertThat(((WeirException) failure).target()).isEqualTo("127.0.0.1:" + closedPort);
      assertThat(failure)
          .as("names the node and why it failed, not only gRPC's \"io exception\"")
          .hasMessageStartingWith("call to 127.0.0.1:" + closedPort + " failed with UNAVAILABLE")
          .hasMessageContaining("Connection refused");
    }
  }

  @Test
  void checkAndCheckAll_failWithTheWeirExceptionItself_notAWrapper() throws Exception {
    int closedPort;
    try (ServerSocket socket = new ServerSocket(0)) {
      closedPort = socket.getLocalPort();
    }
    try (WeirClient client =
        WeirClient.builder()
            .target("127.0.0.1:" + closedPort)
            .batchWindow(Duration.ZERO)
            .deadline(GENEROUS)
            .build()) {
      Throwable one = client.check(item("k1")).handle((r, failure) -> failure).join();
      Throwable all =
          client.checkAll(List.of(item("k1"), item("k2"))).handle((r, failure) -> failure).join();

      assertThat(one)
          .as("what exceptionally() and handle() see")
          .isInstanceOf(WeirUnavailableException.class);
      assertThat(all).isInstanceOf(WeirUnavailableException.class);
    }
  }

  @Test
  void check_anItemTooLargeForAServerMessage_failsAloneAndTheChecksQueuedWithItAreAnswered()
      throws Exception {
    RecordingV1 server = new RecordingV1("a");
    String target = loopback(server);
    RateLimitReq huge = item("x".repeat(5 << 20));
    try (WeirClient client =
        WeirClient.builder().target(target).scheduler(scheduler).deadline(GENEROUS).build()) {
      CompletableFuture<RateLimitResp> before = client.check(item("k1"));
      CompletableFuture<RateLimitResp> tooLarge = client.check(huge);
      CompletableFuture<RateLimitResp> after = client.check(item("k2"));
      scheduler.runDue();

      assertThat(before.join().getRemaining()).isEqualTo(9);
      assertThat(after.join().getRemaining()).isEqualTo(9);
      assertThat(failureOf(tooLarge))
          .isInstanceOfSatisfying(
              WeirException.class,
              e -> assertThat(e.code()).isEqualTo(io.grpc.Status.Code.RESOURCE_EXHAUSTED));
    }
  }

  @Test
  void check_maxBatchBytesAtTheNodesMessageLimit_aCheckTooLargeForItFailsAlone() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    String target = loopback(server, 512 << 10);
    try (WeirClient client =
        WeirClient.builder()
            .target(target)
            .scheduler(scheduler)
            .deadline(GENEROUS)
            .maxBatchBytes(512 << 10)
            .build()) {
      CompletableFuture<RateLimitResp> small = client.check(item("k1"));
      CompletableFuture<RateLimitResp> tooLarge = client.check(item("x".repeat(600_000)));
      scheduler.runDue();

      assertThat(small.join().getRemaining()).isEqualTo(9);
      assertThat(failureOf(tooLarge))
          .isInstanceOfSatisfying(
              WeirException.class,
              e -> assertThat(e.code()).isEqualTo(io.grpc.Status.Code.RESOURCE_EXHAUSTED));
    }
  }

  @Test
  void check_keyWithAnUnpairedSurrogate_answeredWithItsErrorWithoutBeingSent()
      throws Exception {
    RecordingV1 server = new RecordingV1("a");
    try (WeirClient client = inProcessClient(server).build()) {
      CompletableFuture<RateLimitResp> lone = client.check(item("user:\ud800"));
      CompletableFuture<List<RateLimitResp>> all =
          client.checkAll(List.of(item("user:?"), item("a\udc00b")));
      CompletableFuture<RateLimitResp> paired = client.check(item("user:\ud83d\ude00"));
      scheduler.runDue();

      assertThat(server.callSizes()).as("only the valid keys are sent").containsExactly(2);
      assertThat(paired.join().getError()).isEmpty();
      assertThat(lone.join().getError())
          .isEqualTo(
              "field 'unique_key' is \"user:\\ud800\"; it must be valid UTF-16 text, each"
                  + " surrogate paired (\\uD800-\\uDBFF directly followed by \\uDC00-\\uDFFF):"
                  + " the \\ud800 at index 5 is unpaired, and protobuf would send it as '?'");
      assertThat(all.join().get(0).getMetadataMap()).containsEntry("key", "user:?");
      assertThat(all.join().get(1).getError()).contains("the \\udc00 at index 1 is unpaired");
    }
  }

  @Test
  void check_failedCall_failsEveryCheckItCarried() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    server.failWith(io.grpc.Status.UNAVAILABLE.withDescription("shutting down"));
    try (WeirClient client = inProcessClient(server).build()) {
      CompletableFuture<RateLimitResp> first = client.check(item("k1"));
      CompletableFuture<RateLimitResp> second = client.check(item("k2"));
      scheduler.runDue();

      assertThat(failureOf(first))
          .isInstanceOf(WeirUnavailableException.class)
          .hasMessageContaining("UNAVAILABLE: shutting down");
      assertThat(failureOf(second)).isInstanceOf(WeirUnavailableException.class);
    }
  }

  @Test
  void check_nodeSlowerThanTheDeadline_failsWithWeirDeadlineExceededException() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    server.neverAnswer();
    try (WeirClient client =
        WeirClient.builder()
            .target(loopback(server))
            .batchWindow(Duration.ZERO)
            .deadline(Duration.ofMillis(50))
            .build()) {
      Throwable failure = failureOf(client.check(item("k1")));

      assertThat(failure).isInstanceOf(WeirDeadlineExceededException.class);
      assertThat(((WeirException) failure).code()).isEqualTo(io.grpc.Status.Code.DEADLINE_EXCEEDED);
    }
  }

  @Test
  void check_nodeRejectsTheCall_failsWithWeirInvalidRequestException() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    server.failWith(io.grpc.Status.OUT_OF_RANGE.withDescription("too many items"));
    try (WeirClient client = inProcessClient(server).batchWindow(Duration.ZERO).build()) {
      Throwable failure = failureOf(client.check(item("k1")));

      assertThat(failure)
          .isInstanceOf(WeirInvalidRequestException.class)
          .hasMessageContaining("too many items");
      assertThat(((WeirException) failure).code()).isEqualTo(io.grpc.Status.Code.OUT_OF_RANGE);
    }
  }

  @Test
  void check_otherStatus_failsWithWeirExceptionNamingTheCode() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    server.failWith(io.grpc.Status.PERMISSION_DENIED);
    try (WeirClient client = inProcessClient(server).batchWindow(Duration.ZERO).build()) {
      Throwable failure = failureOf(client.check(item("k1")));

      assertThat(failure).isExactlyInstanceOf(WeirException.class);
      assertThat(((WeirException) failure).code()).isEqualTo(io.grpc.Status.Code.PERMISSION_DENIED);
    }
  }

  @Test
  void check_nodeAnswersFewerResponses_failsWithInternalWeirException() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    server.dropOneResponse();
    try (WeirClient client = inProcessClient(server).batchWindow(Duration.ZERO).build()) {
      Throwable failure = failureOf(client.checkAll(List.of(item("k1"), item("k2"))));

      assertThat(failure)
          .isInstanceOf(WeirException.class)
          .hasMessageContaining("answered 1 responses to 2 requests");
      assertThat(((WeirException) failure).code()).isEqualTo(io.grpc.Status.Code.INTERNAL);
    }
  }

  @Test
  void check_severalTargets_sendsCallsToEachInTurn() throws Exception {
    RecordingV1 a = new RecordingV1("a");
    RecordingV1 b = new RecordingV1("b");
    try (WeirClient client =
        WeirClient.builder()
            .targets(List.of(loopback(a), loopback(b)))
            .batchWindow(Duration.ZERO)
            .deadline(GENEROUS)
            .build()) {
      String first = client.check(item("k1")).join().getMetadataMap().get("server");
      String second = client.check(item("k2")).join().getMetadataMap().get("server");

      assertThat(List.of(first, second)).containsExactlyInAnyOrder("a", "b");
      assertThat(a.callSizes()).containsExactly(1);
      assertThat(b.callSizes()).containsExactly(1);
    }
  }

  @Test
  void health_answersTheNodesHealth() throws Exception {
    try (WeirClient client = inProcessClient(new RecordingV1("node-a")).build()) {
      assertThat(client.health().join().getAdvertiseAddress()).isEqualTo("node-a");
    }
  }

  @Test
  void health_nodeFails_failsWithTypedExceptionNamingTheCall() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    server.failWith(io.grpc.Status.UNAVAILABLE.withDescription("draining"));
    try (WeirClient client = inProcessClient(server).build()) {
      assertThat(failureOf(client.health()))
          .isInstanceOf(WeirUnavailableException.class)
          .hasMessageContaining("call to ")
          .hasMessageContaining("UNAVAILABLE: draining");
    }
  }

  @Test
  void close_sendsQueuedChecksAndStopsTheScheduler() throws Exception {
    RecordingV1 server = new RecordingV1("a");
    WeirClient client = inProcessClient(server).build();
    CompletableFuture<RateLimitResp> queued = client.check(item("k1"));

    client.close();

    assertThat(server.callSizes()).containsExactly(1);
    assertThat(queued.join().getMetadataMap()).containsEntry("key", "k1");
    assertThat(scheduler.closed()).isTrue();
  }

  @Test
  void close_thenCheck_failsWithIllegalStateException() throws Exception {
    WeirClient client = inProcessClient(new RecordingV1("a")).build();
    client.close();

    assertThat(failureOf(client.check(item("k1"))))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("closed");
    assertThat(failureOf(client.checkAll(List.of(item("k1")))))
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void close_callerProvidedChannel_leavesItOpen() throws Exception {
    ManagedChannel channel = inProcess(new RecordingV1("a"));
    WeirClient client = WeirClient.builder().channel(channel).build();

    client.close();

    assertThat(channel.isShutdown()).isFalse();
  }

  @Test
  void build_withoutTargetOrChannel_failsNamingWhatIsNeeded() {
    assertThatThrownBy(() -> WeirClient.builder().build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("target");
  }

  @Test
  void build_withTargetAndChannel_fails() throws Exception {
    ManagedChannel channel = inProcess(new RecordingV1("a"));
    assertThatThrownBy(() -> WeirClient.builder().target("localhost:1051").channel(channel).build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("not both");
  }

  @Test
  void builder_outOfRangeSettings_failNamingFieldAndValue() {
    assertThatThrownBy(() -> WeirClient.builder().maxBatch(1001))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("maxBatch must be within 1..1000, got 1001");
    assertThatThrownBy(() -> WeirClient.builder().deadline(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("deadline must be more than zero");
    assertThatThrownBy(() -> WeirClient.builder().batchWindow(Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("batchWindow must be zero or more");
    assertThatThrownBy(() -> WeirClient.builder().target(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("target must be host:port or a gRPC target, got \" \"");
    assertThatThrownBy(() -> WeirClient.builder().target("\t"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("target must be host:port or a gRPC target, got \"\t\"");
    assertThatThrownBy(() -> WeirClient.builder().deadline(Duration.ofSeconds(Long.MAX_VALUE)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "deadline must be more than zero and at most PT24H, got PT2562047788015215H30M7S");
    assertThatThrownBy(() -> WeirClient.builder().batchWindow(Duration.ofMillis(1001)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("batchWindow must be zero or more and at most PT1S, got PT1.001S");
    assertThatThrownBy(() -> WeirClient.builder().maxBatchBytes(65_535))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "maxBatchBytes must be within 65536..67108864 (64 KiB to 64 MiB, at most the nodes'"
                + " message limit), got 65535");
    assertThatThrownBy(() -> WeirClient.builder().maxBatchBytes(67_108_865))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageEndingWith("got 67108865");
        assertThatThrownBy(() -> WeirClient.builder().ringRefresh(Duration.ofDays(2)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("ringRefresh must be more than zero and at most PT24H, got PT48H");
  }

  @Test
  void targets_withABlankOne_failsAndAddsNone() {
    WeirClient.Builder builder = WeirClient.builder().scheduler(scheduler);

    assertThatThrownBy(() -> builder.targets(List.of("a:1051", " ")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("target must be host:port or a gRPC target, got \" \"");
    assertThatThrownBy(builder::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("WeirClient needs a target (host:port) or a channel");
  }

  @Test
  void builder_settingsAtTheirMost_areTaken() {
    WeirClient.builder()
        .deadline(Duration.ofDays(1))
        .batchWindow(Duration.ofSeconds(1))
        .ringRefresh(Duration.ofDays(1));
  }

  @Test
  void build_aTargetGrpcCannotOpen_failsAndShutsDownTheChannelsItOpened() {
    List<ManagedChannel> opened = new ArrayList<>();
    WeirClient.Builder builder =
        WeirClient.builder()
            .target("127.0.0.1:1051")
            .target("nope://weir")
            .scheduler(scheduler)
            .targetChannels(
                target -> {
                  ManagedChannel channel =
                      NettyChannelBuilder.forTarget(target).usePlaintext().build();
                  opened.add(channel);
                  return channel;
                });

    assertThatThrownBy(builder::build)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("nope://weir");
    assertThat(opened).hasSize(1);
    assertThat(opened.get(0).isShutdown()).as("the first target's channel").isTrue();
  }

  @Test
  void build_firstRingCallFailsAtOnce_failsAndClosesWhatItStarted() throws Exception {
    ManagedChannel failing =
        new ForwardingChannel(inProcess(new RecordingV1("a"))) {
          @Override
          public <Q, R> ClientCall<Q, R> newCall(
              MethodDescriptor<Q, R> method, CallOptions options) {
            throw new IllegalStateException("this channel makes no calls");
          }
        };
    WeirClient.Builder builder =
        WeirClient.builder()
            .channel(failing)
            .sendToOwners()
            .memberChannels(address -> InProcessChannelBuilder.forName(address).build())
            .scheduler(scheduler);

    assertThatThrownBy(builder::build).hasMessage("this channel makes no calls");
    assertThat(scheduler.closed()).as("the scheduler").isTrue();
    assertThat(scheduler.waiting()).as("no ring refresh is due").isEmpty();
    assertThat(failing.isShutdown()).as("the caller's channel stays open").isFalse();
  }

  @Test
  void close_whileTheBatchTimerStartsItsCall_theQueuedCheckIsAnswered_thenTheChannelShutsDown()
      throws Exception {
    RecordingV1 server = new RecordingV1("a");
    ManagedChannel opened = inProcess(server);
    // Holds the timer's call between taking the batch and starting the call until close() returned.
    CallStartGate closeReturned = new CallStartGate(GENEROUS);
    ManagedChannel pausing = closeReturned.hold(opened);
    WeirClient client =
        WeirClient.builder()
            .target("weir:1051")
            .targetChannels(target -> pausing)
            .scheduler(scheduler)
            .deadline(GENEROUS)
            .build();
    CompletableFuture<RateLimitResp> queued = client.check(item("k1"));
    Thread timer = new Thread(scheduler::runDue, "batch-timer");
    timer.start();
    assertThat(closeReturned.awaitCallStarting()).isTrue();

    client.close();
    boolean shutDownBeforeTheCallStarted = opened.isShutdown();
    closeReturned.open();
    timer.join(GENEROUS.toMillis());

    assertThat(queued).succeedsWithin(GENEROUS);
    assertThat(queued.join().getMetadataMap()).containsEntry("key", "k1");
    assertThat(shutDownBeforeTheCallStarted).as("shut down before the call started").isFalse();
    assertThat(opened.isShutdown()).as("shut down once the call started").isTrue();
  }

  /** A channel that passes everything to another, for tests to override one method. */
  static class ForwardingChannel extends ManagedChannel {
    private final ManagedChannel delegate;

    ForwardingChannel(ManagedChannel delegate) {
      this.delegate = delegate;
    }

    @Override
    public ManagedChannel shutdown() {
      return delegate.shutdown();
    }

    @Override
    public boolean isShutdown() {
      return delegate.isShutdown();
    }

    @Override
    public boolean isTerminated() {
      return delegate.isTerminated();
    }

    @Override
    public ManagedChannel shutdownNow() {
      return delegate.shutdownNow();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
      return delegate.awaitTermination(timeout, unit);
    }

    @Override
    public <Q, R> ClientCall<Q, R> newCall(MethodDescriptor<Q, R> method, CallOptions options) {
      return delegate.newCall(method, options);
    }

    @Override
    public String authority() {
      return delegate.authority();
    }
  }
}
