package dev.weir.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.ring.GetRingReq;
import dev.weir.proto.ring.GetRingResp;
import dev.weir.proto.ring.RingGrpc;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link WeirClient.Builder#sendToOwners()} against in-process nodes named by address: a seed
 * target that answers the ring, and members that answer checks with their own name.
 */
class WeirClientOwnersTest {

  private static final List<String> MEMBERS =
      List.of("10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.3:1051");
  private static final int REPLICAS = 64;
  private static final Duration GENEROUS = Duration.ofSeconds(30);

  private final List<Server> servers = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final Map<String, RecordingV1> nodes = new HashMap<>();
  private final FakeRing ring = new FakeRing();
  private final FakeBatchScheduler scheduler = new FakeBatchScheduler();
  private ManagedChannel seed;

  /**
   * A {@code weir.v1.Ring} whose answer the test sets; null answers {@code UNIMPLEMENTED}. While
   * {@code holding}, it keeps each call unanswered until the test {@link #answerHeld answers} it.
   */
  private static final class FakeRing extends RingGrpc.RingImplBase {
    volatile GetRingResp answer;
    volatile boolean holding;
    final AtomicInteger calls = new AtomicInteger();
    final List<StreamObserver<GetRingResp>> held = new CopyOnWriteArrayList<>();

    /** Answers the {@code call}th held call (from 0) with {@code ring}. */
    void answerHeld(int call, GetRingResp ring) {
      held.get(call).onNext(ring);
      held.get(call).onCompleted();
    }

    @Override
    public void getRing(GetRingReq request, StreamObserver<GetRingResp> observer) {
      calls.incrementAndGet();
      if (holding) {
        held.add(observer);
        return;
      }
      if (answer == null) {
        observer.onError(Status.UNIMPLEMENTED.asRuntimeException());
        return;
      }
      observer.onNext(answer);
      observer.onCompleted();
    }
  }

  private static GetRingResp ringOf(List<String> members, String hash) {
    return GetRingResp.newBuilder()
        .addAllMembers(members)
        .setHash(hash)
        .setReplicas(REPLICAS)
        .setSelf(members.get(0))
        .build();
  }

  @BeforeEach
  void startNodes() throws Exception {
    for (String address : MEMBERS) {
      nodes.put(address, new RecordingV1(address));
      servers.add(
          InProcessServerBuilder.forName(address)
              .directExecutor()
              .addService(nodes.get(address))
              .build()
              .start());
    }
    nodes.put("seed", new RecordingV1("seed"));
    servers.add(
        InProcessServerBuilder.forName("seed")
            .directExecutor()
            .addService(nodes.get("seed"))
            .addService(ring)
            .build()
            .start());
    seed = InProcessChannelBuilder.forName("seed").directExecutor().build();
    channels.add(seed);
  }

  @AfterEach
  void stop() {
    channels.forEach(ManagedChannel::shutdownNow);
    servers.forEach(Server::shutdownNow);
  }

  /**
   * Returns a builder of a client that asks {@code target} for the ring and sends each check to its
   * owner over an in-process channel, at once, timing on {@link #scheduler}.
   */
  private WeirClient.Builder sendingToOwners(ManagedChannel target) {
    return WeirClient.builder()
        .channel(target)
        .sendToOwners()
        .memberChannels(
            address -> InProcessChannelBuilder.forName(address).directExecutor().build())
        .batchWindow(Duration.ZERO)
        .scheduler(scheduler);
  }

  private WeirClient client() {
    return sendingToOwners(seed).build();
  }

  private static RateLimitReq item(String key) {
    return WeirClientTest.item(key);
  }

  private static List<RateLimitReq> items(int n) {
    return IntStream.range(0, n).mapToObj(i -> item("account:" + i)).toList();
  }

  private static String server(RateLimitResp response) {
    return response.getMetadataOrThrow("server");
  }

  @Test
  void checkAll_eachCheckGoesToTheMemberTheNodesRingNames_inOrder() {
    ring.answer = ringOf(MEMBERS, "fnv1a-fmix64");
    HashRing nodesRing = HashRing.of(MEMBERS, REPLICAS, PeerHash.FNV1A_FMIX64);
    List<RateLimitReq> requests = items(60);

    try (WeirClient client = client()) {
      List<RateLimitResp> responses = client.checkAll(requests).join();

      assertThat(client.ringMembers()).containsExactlyElementsOf(MEMBERS);
      for (int i = 0; i < requests.size(); i++) {
        assertThat(responses.get(i).getMetadataOrThrow("key")).isEqualTo("account:" + i);
        assertThat(server(responses.get(i)))
            .as("owner of account:%d", i)
            .isEqualTo(nodesRing.ownerOf("requests_per_sec_account:" + i));
      }
      assertThat(responses.stream().map(WeirClientOwnersTest::server).distinct())
          .containsExactlyInAnyOrderElementsOf(MEMBERS);
      assertThat(nodes.get("seed").callSizes()).isEmpty();
    }
  }

  @Test
  void refreshTimer_memberLeftTheRing_itsKeysGoToTheOthers() {
    ring.answer = ringOf(MEMBERS, "fnv1a-fmix64");
    try (WeirClient client = client()) {
      assertThat(scheduler.waiting()).containsExactly(WeirClient.DEFAULT_RING_REFRESH);
      List<String> before =
          client.checkAll(items(30)).join().stream().map(WeirClientOwnersTest::server).toList();
      assertThat(before).contains(MEMBERS.get(2));
      int callsToLeaver = nodes.get(MEMBERS.get(2)).callSizes().size();

      ring.answer = ringOf(MEMBERS.subList(0, 2), "fnv1a-fmix64");
      scheduler.runDue();
      List<String> after =
          client.checkAll(items(30)).join().stream().map(WeirClientOwnersTest::server).toList();

      assertThat(client.ringMembers()).containsExactlyElementsOf(MEMBERS.subList(0, 2));
      assertThat(after).doesNotContain(MEMBERS.get(2));
      for (int i = 0; i < 30; i++) {
        if (!before.get(i).equals(MEMBERS.get(2))) {
          assertThat(after.get(i)).as("a key of a member that stayed keeps its owner").isEqualTo(
              before.get(i));
        }
      }
      assertThat(nodes.get(MEMBERS.get(2)).callSizes()).hasSize(callsToLeaver);
      assertThat(scheduler.waiting()).containsExactly(WeirClient.DEFAULT_RING_REFRESH);
    }
  }

  @Test
  void memberLeftTheRing_itsChannelShutsDown_andACheckThatPickedItGoesThroughTheTarget() {
    ring.answer = ringOf(MEMBERS, "fnv1a-fmix64");
    String leaver = MEMBERS.get(2);
    String key = keyOwnedBy(MEMBERS, leaver);
    Map<String, ManagedChannel> opened = new ConcurrentHashMap<>();
    WeirClient.Builder builder =
        sendingToOwners(seed)
            .memberChannels(
                address ->
                    opened.computeIfAbsent(
                        address,
                        a -> InProcessChannelBuilder.forName(a).directExecutor().build()));
    try (WeirClient client = builder.build()) {
      assertThat(server(client.check(item(key)).join())).isEqualTo(leaver);
      // A check racing the change: it picked the leaver's batcher just before.
      CheckBatcher picked = client.batcherFor(item(key));

      ring.answer = ringOf(MEMBERS.subList(0, 2), "fnv1a-fmix64");
      scheduler.runDue();
      CompletableFuture<RateLimitResp> racing = new CompletableFuture<>();
      picked.add(List.of(new CheckBatcher.Pending(item(key), racing)));

      assertThat(opened.get(leaver).isShutdown())
          .as("the leaver's channel, with no ring change since it left")
          .isTrue();
      assertThat(server(racing.join()))
          .as("the check that picked the leaver, sent again through the target")
          .isEqualTo("seed");
      assertThat(nodes.get(leaver).callSizes()).containsExactly(1);
      assertThat(opened.get(MEMBERS.get(0)).isShutdown()).as("a member that stayed").isFalse();
    }
  }

  @Test
  void refreshRing_anOlderAskAnsweredAfterANewerOne_isDropped() {
    List<String> older = MEMBERS;
    List<String> newer = MEMBERS.subList(0, 2);
    ring.holding = true;
    try (WeirClient client = client()) {
      CompletableFuture<Void> newerAsk = client.refreshRing();
      assertThat(ring.held).as("the build's ask and the newer one, both unanswered").hasSize(2);

      ring.answerHeld(1, ringOf(newer, "fnv1a-fmix64"));
      newerAsk.join();
      ring.answerHeld(0, ringOf(older, "fnv1a-fmix64"));

      assertThat(client.ringMembers())
          .as("the ring of the newer ask, answered first")
          .containsExactlyElementsOf(newer);
      assertThat(server(client.check(item(keyOwnedBy(MEMBERS, MEMBERS.get(2)))).join()))
          .as("a key the departed member owned on the older ring")
          .isNotEqualTo(MEMBERS.get(2));
    }
  }

  @Test
  void refreshRing_twoAsksStartingInTurn_theLaterStartedOnesRingStays() throws Exception {
    CountDownLatch paused = new CountDownLatch(1);
    CountDownLatch go = new CountDownLatch(1);
    AtomicInteger asks = new AtomicInteger();
    ClientInterceptor pausingTheSecondAsk =
        new ClientInterceptor() {
          @Override
          public <Q, A> ClientCall<Q, A> interceptCall(
              MethodDescriptor<Q, A> method, CallOptions options, Channel next) {
            if (method.getFullMethodName().equals(RingGrpc.getGetRingMethod().getFullMethodName())
                && asks.incrementAndGet() == 2) {
              paused.countDown();
              try {
                go.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
            return next.newCall(method, options);
          }
        };
    ManagedChannel target =
        InProcessChannelBuilder.forName("seed")
            .directExecutor()
            .intercept(pausingTheSecondAsk)
            .build();
    channels.add(target);
    List<String> older = MEMBERS;
    List<String> newer = MEMBERS.subList(0, 2);
    ring.holding = true;
    try (WeirClient client = sendingToOwners(target).build()) {
      CompletableFuture<CompletableFuture<Void>> first = new CompletableFuture<>();
      CompletableFuture<CompletableFuture<Void>> second = new CompletableFuture<>();
      Thread firstCaller = new Thread(() -> first.complete(client.refreshRing()));
      firstCaller.start();
      assertThat(paused.await(10, TimeUnit.SECONDS)).as("the first ask paused").isTrue();
      Thread secondCaller = new Thread(() -> second.complete(client.refreshRing()));
      secondCaller.start();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      // BLOCKED on the ask lock, the only monitor refreshRing takes before its call starts.
      while (ring.held.size() < 2
          && secondCaller.getState() != Thread.State.BLOCKED
          && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
      go.countDown();
      firstCaller.join(10_000);
      secondCaller.join(10_000);
      assertThat(firstCaller.isAlive() || secondCaller.isAlive()).as("callers done").isFalse();
      assertThat(ring.held).as("the build's ask and both refreshes, unanswered").hasSize(3);

      ring.answerHeld(0, ringOf(older, "fnv1a-fmix64"));
      ring.answerHeld(1, ringOf(older, "fnv1a-fmix64"));
      ring.answerHeld(2, ringOf(newer, "fnv1a-fmix64"));
      CompletableFuture.allOf(first.join(), second.join()).join();

      assertThat(client.ringMembers())
          .as("the ring answered to the ask that reached the target last")
          .containsExactlyElementsOf(newer);
    }
  }

  @Test
  void build_inACancelledContext_stillAsksForTheRing() throws Exception {
    ring.answer = ringOf(MEMBERS, "fnv1a-fmix64");
    // Built lazily by a gRPC handler whose own call is cancelled (its client left).
    Context.CancellableContext handler = Context.current().withCancellation();
    handler.cancel(null);

    try (WeirClient client = handler.call(() -> client())) {
      assertThat(client.ringMembers()).containsExactlyElementsOf(MEMBERS);
    }
  }

  @Test
  void refreshRing_unknownHash_failsNamingTheValueAndTheAllowed_andChecksGoToTheTarget() {
    ring.answer = ringOf(MEMBERS, "crc32");
    try (WeirClient client = client()) {
      assertThatThrownBy(() -> client.refreshRing().join())
          .isInstanceOf(CompletionException.class)
          .cause()
          .isInstanceOf(WeirException.class)
          .hasMessageContaining("answered a ring this client cannot use")
          .hasMessageContaining("'crc32'; allowed: fnv1a-fmix64, fnv1a, fnv1");

      assertThat(client.ringMembers()).isEmpty();
      assertThat(server(client.check(item("account:1")).join())).isEqualTo("seed");
    }
  }

  @Test
  void refreshRing_pointsOutOfRange_failsNamingTheValueAndTheRange() {
    ring.answer = ringOf(MEMBERS, "fnv1a").toBuilder().setReplicas(70_000).build();
    try (WeirClient client = client()) {
      assertThatThrownBy(() -> client.refreshRing().join())
          .cause()
          .isInstanceOf(WeirException.class)
          .hasMessageContaining("replicas is 70000; allowed: 1 to 65536");

      assertThat(client.ringMembers()).isEmpty();
    }
  }

  @Test
  void refreshRing_targetWithoutTheRingService_failsUnimplemented_andChecksGoToTheTarget() {
    ring.answer = null;
    try (WeirClient client = client()) {
      assertThatThrownBy(() -> client.refreshRing().join())
          .cause()
          .isInstanceOfSatisfying(
              WeirException.class, e -> assertThat(e.code()).isEqualTo(Status.Code.UNIMPLEMENTED));

      assertThat(server(client.check(item("account:1")).join())).isEqualTo("seed");
    }
  }

  /**
   * Returns the first key {@code account:<i>} whose item {@code owner} owns on the ring of {@code
   * members}.
   */
  private static String keyOwnedBy(List<String> members, String owner) {
    HashRing nodesRing = HashRing.of(members, REPLICAS, PeerHash.FNV1A_FMIX64);
    return IntStream.range(0, 200)
        .mapToObj(i -> "account:" + i)
        .filter(k -> nodesRing.ownerOf("requests_per_sec_" + k).equals(owner))
        .findFirst()
        .orElseThrow();
  }

  /**
   * Sets the seed's ring to two members and {@code 10.0.0.9:1051}, which no server serves; returns
   * a key that member owns.
   */
  private String ringWithAnUnconnectedOwner() {
    String unconnected = "10.0.0.9:1051";
    List<String> members = List.of(MEMBERS.get(0), MEMBERS.get(1), unconnected);
    ring.answer = ringOf(members, "fnv1a-fmix64");
    return keyOwnedBy(members, unconnected);
  }

  @Test
  void check_ownerUnreachable_failsUnavailable_andTheClientAsksForTheRingAtOnce() {
    ring.answer = ringOf(MEMBERS, "fnv1a-fmix64");
    String key = keyOwnedBy(MEMBERS, MEMBERS.get(1));
    try (WeirClient client = client()) {
      nodes.get(MEMBERS.get(1)).failWith(Status.UNAVAILABLE.withDescription("connection refused"));
      ring.answer = ringOf(List.of(MEMBERS.get(0), MEMBERS.get(2)), "fnv1a-fmix64");
      int callsBefore = ring.calls.get();

      assertThatThrownBy(() -> client.check(item(key)).join())
          .cause()
          .isInstanceOf(WeirUnavailableException.class);

      assertThat(nodes.get("seed").callSizes())
          .as("the owner got the call and may have counted it: not sent again")
          .isEmpty();
      assertThat(ring.calls.get()).isEqualTo(callsBefore + 1);
      assertThat(client.ringMembers()).containsExactly(MEMBERS.get(0), MEMBERS.get(2));
      assertThat(server(client.check(item(key)).join())).isNotEqualTo(MEMBERS.get(1));
    }
  }

  @Test
  void check_ownerNotConnected_isSentAgainThroughTheTarget_andTheClientAsksForTheRingAtOnce() {
    // No server of that name: the connection fails before the call is sent, as a refused
    // connection or a failed TLS handshake (a peer listener requiring client certificates) does.
    String key = ringWithAnUnconnectedOwner();
    try (WeirClient client = client()) {
      int callsBefore = ring.calls.get();

      RateLimitResp response = client.check(item(key)).join();

      assertThat(server(response)).as("sent again through the target").isEqualTo("seed");
      assertThat(nodes.get("seed").callSizes()).containsExactly(1);
      assertThat(ring.calls.get()).as("asked for the ring at once").isEqualTo(callsBefore + 1);
    }
  }

  @Test
  void check_ownerRefusesTheConnection_isSentAgainThroughTheTarget() throws Exception {
    int closedPort;
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = socket.getLocalPort();
    }
    String refusing = "127.0.0.1:" + closedPort;
    List<String> members = List.of(MEMBERS.get(0), refusing);
    ring.answer = ringOf(members, "fnv1a-fmix64");
    String key = keyOwnedBy(members, refusing);
    try (WeirClient client =
        WeirClient.builder()
            .channel(seed)
            .sendToOwners()
            .memberChannels(
                address ->
                    address.equals(refusing)
                        ? NettyChannelBuilder.forTarget(address).usePlaintext().build()
                        : InProcessChannelBuilder.forName(address).directExecutor().build())
            .batchWindow(Duration.ZERO)
            .scheduler(scheduler)
            .build()) {
      client.refreshRing().join();

      assertThat(server(client.check(item(key)).join())).isEqualTo("seed");
      assertThat(server(client.check(item(key)).join())).isEqualTo("seed");
      assertThat(nodes.get("seed").callSizes()).containsExactly(1, 1);
    }
  }

  @Test
  void close_whileAMemberBatchTimerStartsItsCall_theCheckTheMemberFailsIsAnsweredThroughTheTarget()
      throws Exception {
    String unconnected = "10.0.0.9:1051";
    List<String> members = List.of(MEMBERS.get(0), unconnected);
    ring.answer = ringOf(members, "fnv1a-fmix64");
    String key = keyOwnedBy(members, unconnected);
    ManagedChannel target = InProcessChannelBuilder.forName("seed").directExecutor().build();
    channels.add(target);
    // Holds the member's timer call between taking the batch and starting the call until close()
    // returned; the call then fails UNAVAILABLE before it got a stream (no node of that name).
    CallStartGate closeReturned = new CallStartGate(GENEROUS);
    Function<String, ManagedChannel> memberChannels =
        address -> {
          ManagedChannel channel = InProcessChannelBuilder.forName(address).directExecutor().build();
          return address.equals(unconnected) ? closeReturned.hold(channel) : channel;
        };
    WeirClient client =
        WeirClient.builder()
            .target("weir:1051")
            .targetChannels(t -> target)
            .sendToOwners()
            .memberChannels(memberChannels)
            .batchWindow(Duration.ofMillis(5))
            .deadline(GENEROUS)
            .ringRefresh(Duration.ofHours(1))
            .scheduler(scheduler)
            .build();
    client.refreshRing().join();
    CompletableFuture<RateLimitResp> queued = client.check(item(key));
    Thread timer = new Thread(scheduler::runDue, "member-batch-timer");
    timer.start();
    assertThat(closeReturned.awaitCallStarting()).isTrue();

    client.close();
    boolean targetShutDownBeforeTheMemberCallFailed = target.isShutdown();
    closeReturned.open();
    timer.join(GENEROUS.toMillis());

    assertThat(queued).succeedsWithin(GENEROUS);
    assertThat(server(queued.join())).as("sent again through the target").isEqualTo("seed");
    assertThat(targetShutDownBeforeTheMemberCallFailed)
        .as("target shut down before the member's call failed")
        .isFalse();
    assertThat(target.isShutdown()).as("target shut down once the re-send started").isTrue();
  }

  @Test
  void check_ownerNeverAnswers_failsDeadlineExceeded_andTheClientAsksForTheRingAtOnce() {
    ring.answer = ringOf(MEMBERS, "fnv1a-fmix64");
    String key = keyOwnedBy(MEMBERS, MEMBERS.get(1));
    try (WeirClient client =
        sendingToOwners(seed)
            .deadline(Duration.ofMillis(100))
            .ringRefresh(Duration.ofHours(1))
            .build()) {
      // A member that is gone without refusing connections (its node froze, packets dropped).
      nodes.get(MEMBERS.get(1)).neverAnswer();
      ring.answer = ringOf(List.of(MEMBERS.get(0), MEMBERS.get(2)), "fnv1a-fmix64");
      int callsBefore = ring.calls.get();

      assertThatThrownBy(() -> client.check(item(key)).join())
          .cause()
          .isInstanceOf(WeirDeadlineExceededException.class);

      assertThat(scheduler.waiting())
          .as("the periodic refresh has not fired")
          .contains(Duration.ofHours(1));
      assertThat(ring.calls.get()).isEqualTo(callsBefore + 1);
      assertThat(client.ringMembers()).containsExactly(MEMBERS.get(0), MEMBERS.get(2));
      assertThat(server(client.check(item(key)).join())).isNotEqualTo(MEMBERS.get(1));
    }
  }

  @Test
  void check_ownerServesNoChecks_itsKeysGoThroughTheTargetAndTheOthersStayDirect()
      throws Exception {
    String embedded = "10.0.0.4:1051";
    // An embedded member listening for peers only: its server has no V1 service.
    servers.add(InProcessServerBuilder.forName(embedded).directExecutor().build().start());
    List<String> members = List.of(MEMBERS.get(0), MEMBERS.get(1), embedded);
    ring.answer = ringOf(members, "fnv1a-fmix64");
    String ownedByEmbedded = keyOwnedBy(members, embedded);
    String ownedByAMember = keyOwnedBy(members, MEMBERS.get(0));
    try (WeirClient client = client()) {
      assertThat(client.ringMembers()).contains(embedded);

      assertThat(server(client.check(item(ownedByEmbedded)).join()))
          .as("sent again through the target, which forwards it")
          .isEqualTo("seed");
      assertThat(server(client.check(item(ownedByEmbedded)).join())).isEqualTo("seed");
      assertThat(server(client.check(item(ownedByAMember)).join())).isEqualTo(MEMBERS.get(0));
      assertThat(nodes.get("seed").callSizes()).as("no failed call to retry").containsExactly(1, 1);
    }
  }

  @Test
  void check_ownerDownForLong_theRingIsAskedOnceAPauseNotOncePerFailedCall() {
    ring.answer = ringOf(MEMBERS, "fnv1a-fmix64");
    String key = keyOwnedBy(MEMBERS, MEMBERS.get(1));
    try (WeirClient client = client()) {
      // The servers' ring keeps naming the member (peer failure mode "fail", or not yet found down).
      nodes.get(MEMBERS.get(1)).failWith(Status.UNAVAILABLE.withDescription("connection refused"));
      int callsBefore = ring.calls.get();

      for (int i = 0; i < 20; i++) {
        client.check(item(key)).handle((r, failure) -> failure).join();
      }

      assertThat(ring.calls.get()).as("one ask for 20 failed calls").isEqualTo(callsBefore + 1);
      assertThat(scheduler.waiting()).contains(WeirClient.RING_ASK_PAUSE);
      scheduler.runDue();
      client.check(item(key)).handle((r, failure) -> failure).join();
      assertThat(ring.calls.get())
          .as("after the pause (and the periodic refresh), the next failure asks again")
          .isEqualTo(callsBefore + 3);
    }
  }

  /**
   * Returns a channel to the seed whose {@code GetRing} calls after the first {@code okAsks} throw
   * from the channel itself (as a client interceptor of the caller's may), {@code throwingAsks}
   * times, and counts them in {@code asks}.
   */
  private ManagedChannel seedWhoseRingAskThrows(int okAsks, int throwingAsks, AtomicInteger asks) {
    ClientInterceptor throwing =
        new ClientInterceptor() {
          @Override
          public <Q, A> ClientCall<Q, A> interceptCall(
              MethodDescriptor<Q, A> method, CallOptions options, Channel next) {
            if (method.getFullMethodName().equals(RingGrpc.getGetRingMethod().getFullMethodName())) {
              int ask = asks.incrementAndGet();
              if (ask > okAsks && ask <= okAsks + throwingAsks) {
                throw new IllegalStateException("interceptor failed on ask " + ask);
              }
            }
            return next.newCall(method, options);
          }
        };
    ManagedChannel channel =
        InProcessChannelBuilder.forName("seed").directExecutor().intercept(throwing).build();
    channels.add(channel);
    return channel;
  }

  @Test
  void refreshTimer_ringAskThrows_theTimerAsksAgainLater() {
    ring.answer = ringOf(MEMBERS, "fnv1a-fmix64");
    AtomicInteger asks = new AtomicInteger();
    try (WeirClient client = sendingToOwners(seedWhoseRingAskThrows(1, 1, asks)).build()) {
      ring.answer = ringOf(MEMBERS.subList(0, 2), "fnv1a-fmix64");

      assertThatCode(scheduler::runDue).as("the timer's task").doesNotThrowAnyException();

      assertThat(asks.get()).isEqualTo(2);
      assertThat(scheduler.waiting())
          .as("the next periodic ask")
          .containsExactly(WeirClient.DEFAULT_RING_REFRESH);
      scheduler.runDue();
      assertThat(client.ringMembers()).containsExactlyElementsOf(MEMBERS.subList(0, 2));
    }
  }

  @Test
  void check_ownerNotConnectedWhileTheRingAskThrows_isSentAgainThroughTheTarget_andAsksLater() {
    String key = ringWithAnUnconnectedOwner();
    AtomicInteger asks = new AtomicInteger();
    try (WeirClient client =
        sendingToOwners(seedWhoseRingAskThrows(1, 1, asks))
            .ringRefresh(Duration.ofHours(1))
            .build()) {
      RateLimitResp response = client.check(item(key)).join();

      assertThat(server(response)).as("sent again through the target").isEqualTo("seed");
      assertThat(asks.get()).as("asked for the ring at once").isEqualTo(2);
      assertThat(scheduler.waiting())
          .as("asking again allowed after the pause")
          .contains(WeirClient.RING_ASK_PAUSE);
      scheduler.runDue();
      client.check(item(key)).join();
      assertThat(asks.get()).as("the periodic ask, then the next failure's").isEqualTo(4);
    }
  }

  @Test
  void builderChangedAfterBuild_memberBatchersKeepTheBatchWindowTheClientWasBuiltWith() {
    ring.answer = null;
    WeirClient.Builder builder = sendingToOwners(seed);
    try (WeirClient client = builder.build()) {
      builder.batchWindow(Duration.ofSeconds(1));
      ring.answer = ringOf(MEMBERS, "fnv1a-fmix64");
      client.refreshRing().join();

      CompletableFuture<RateLimitResp> response = client.check(item("account:1"));

      assertThat(scheduler.waiting()).as("batch timers").doesNotContain(Duration.ofSeconds(1));
      assertThat(response).as("sent at once, as built with a zero window").isDone();
      assertThat(MEMBERS).contains(server(response.join()));
    }
  }

  @Test
  void builderChangedAfterBuild_memberChannelsKeepTheTransportSecurityTheClientWasBuiltWith()
      throws Exception {
    Server plaintextMember =
        NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
            .addService(new RecordingV1("plaintext member"))
            .build()
            .start();
    servers.add(plaintextMember);
    String member = "127.0.0.1:" + plaintextMember.getPort();
    ManagedChannel target = InProcessChannelBuilder.forName("seed").directExecutor().build();
    channels.add(target);
    ring.answer = null;
    WeirClient.Builder builder =
        WeirClient.builder()
            .target("weir:1051")
            .targetChannels(t -> target)
            .useTransportSecurity()
            .sendToOwners()
            .batchWindow(Duration.ZERO)
            .scheduler(scheduler);
    try (WeirClient client = builder.build()) {
      builder.usePlaintext();
      ring.answer = ringOf(List.of(member), "fnv1a-fmix64");
      client.refreshRing().join();

      RateLimitResp response = client.check(item("account:1")).join();

      assertThat(server(response))
          .as("the member's TLS handshake failed, so the check went again through the target")
          .isEqualTo("seed");
    }
  }

  @Test
  void refreshRing_clientNotSendingToOwners_isRefused() {
    try (WeirClient client = WeirClient.builder().channel(seed).scheduler(scheduler).build()) {
      assertThatThrownBy(client::refreshRing)
          .isInstanceOf(IllegalStateException.class)
          .hasMessage("refreshRing needs a client built with sendToOwners()");
      assertThat(scheduler.waiting()).isEmpty();
    }
  }

  @Test
  void build_channelAndSendToOwnersWithoutMemberChannels_failsNamingBothAndWhy() {
    WeirClient.Builder builder =
        WeirClient.builder().channel(seed).sendToOwners().scheduler(scheduler);

    assertThatThrownBy(builder::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("sendToOwners() with channel(...) needs memberChannels(...)")
        .hasMessageContaining("cannot copy the given channel's settings");
    assertThat(scheduler.waiting()).as("nothing was started").isEmpty();
  }

  @Test
  void build_memberChannelsWithoutSendToOwners_failsNamingBoth() {
    WeirClient.Builder builder =
        WeirClient.builder()
            .channel(seed)
            .memberChannels(address -> InProcessChannelBuilder.forName(address).build());

    assertThatThrownBy(builder::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("memberChannels(...) needs sendToOwners()");
  }

  @Test
  void ringRefresh_zero_isRefusedNamingTheValue() {
    assertThatThrownBy(() -> WeirClient.builder().ringRefresh(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("ringRefresh must be more than zero and at most PT24H, got PT0S");
  }
}
