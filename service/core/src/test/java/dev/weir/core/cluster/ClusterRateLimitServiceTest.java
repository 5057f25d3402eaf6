package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.global.GlobalManager;
import dev.weir.core.cluster.peer.EncodedMetadata;
import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerClientPool;
import dev.weir.core.cluster.peer.PeerClientSettings;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.limiter.BucketCheck;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.core.testkit.WindowCounterCheck;
import dev.weir.core.tracing.ClusterTracing;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ClusterRateLimitServiceTest {

  private static final String SELF = "self:1";
  private static final String OWNER = "owner:1";

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  // Every peer is unreachable: forwards fail with UNAVAILABLE.
  private final PeerClientPool pool =
      new PeerClientPool(
          address ->
              new PeerClient(
                  address,
                  InProcessChannelBuilder.forName(InProcessServerBuilder.generateName())
                      .directExecutor()
                      .build(),
                  new PeerClientSettings(1000, Duration.ofMillis(1), Duration.ofSeconds(5), true),
                  scheduler,
                  clock),
          clock);

  @AfterEach
  void stop() {
    pool.close();
  }

  private ClusterRateLimitService service(Supplier<HashRing> ring) {
    WindowCounterCheck local = new WindowCounterCheck(store);
    GlobalManager global =
        new GlobalManager(
            SELF, ring, pool, local, store, scheduler, clock, Duration.ofMillis(100), 1000,
            Duration.ofSeconds(5));
    return new ClusterRateLimitService(SELF, ring, local, pool, global, clock, null, Duration.ZERO);
  }

  @Test
  void check_everyItemOwnedHere_futureCompleteOnReturn() {
    ClusterRateLimitService service =
        service(() -> HashRing.of(List.of(SELF), 64, PeerHash.FNV1A));

    var answer =
        service.decide(
            List.of(
                RateLimitRequest.builder("n", "a").limit(2).duration(1000).build(),
                RateLimitRequest.builder("n", "b").limit(2).duration(1000).build()));

    assertThat(answer).isDone();
    assertThat(answer.join()).extracting(RateLimitResponse::remaining).containsExactly(1L, 1L);
  }

  @Test
  void check_aNameWithTheStandInPrefix_itsItemRefusedAndNoStandInBucketTouched() {
    ClusterRateLimitService service =
        service(() -> HashRing.of(List.of(SELF), 64, PeerHash.FNV1A));

    List<RateLimitResponse> answers =
        service
            .decide(
                List.of(
                    RateLimitRequest.builder("weir:stand-in:api", "k").limit(2).duration(1000).build(),
                    RateLimitRequest.builder("api", "k").limit(2).duration(1000).build()))
            .join();

    assertThat(answers.get(0).error())
        .contains("field 'name' cannot start with 'weir:stand-in:'")
        .contains("got 'weir:stand-in:api'");
    assertThat(answers.get(1).remaining()).as("the call's other item is answered").isEqualTo(1);
    assertThat(store.get(StandIns.PREFIX + "api_k")).as("no stand-in bucket of 'api'").isEmpty();
  }

  @Test
  void check_ringEmpty_thisNodeLeftAndEveryOtherIsDown_answersItselfNotWithAnError() {
    ClusterRateLimitService service =
        service(() -> HashRing.of(List.of(), 64, PeerHash.FNV1A));

    List<RateLimitResponse> answers =
        service
            .decide(List.of(RateLimitRequest.builder("n", "a").limit(2).duration(1000).build()))
            .join();

    assertThat(answers.get(0).isError()).isFalse();
    assertThat(answers.get(0).remaining()).isEqualTo(1);
  }

  @Test
  void check_forwardFailsWhileRingEmptiesBetweenReads_itemErrorNotFailedCall() {
    HashRing two = HashRing.of(List.of(SELF, OWNER), 64, PeerHash.FNV1A);
    String key = null;
    for (int i = 0; key == null; i++) {
      if (two.ownerOf("n_k" + i).equals(OWNER)) {
        key = "k" + i;
      }
    }
    HashRing empty = HashRing.of(List.of(), 64, PeerHash.FNV1A);
    // The route reads the ring once; the failure callback then sees it populated, then empty.
    Deque<HashRing> readings = new ArrayDeque<>(List.of(two, two));
    ClusterRateLimitService service =
        service(() -> readings.isEmpty() ? empty : readings.poll());

    List<RateLimitResponse> answers =
        service
            .decide(
                List.of(
                    RateLimitRequest.builder("n", key).hits(1).limit(10).duration(60_000).build()))
            .join();

    assertThat(answers).hasSize(1);
    assertThat(answers.get(0).error()).contains("owner:1");
  }

  /**
   * An owner on an in-process server answering {@code GetPeerRateLimits} with {@code peers}, a
   * member {@code SELF} that forwards to it with 10 ms stand-ins, and a key the owner owns.
   */
  private final class StandInFixture implements AutoCloseable {
    final HashRing two;
    final List<String> standIns = new java.util.ArrayList<>();
    final Server owner;
    final PeerClientPool toOwner;
    final ClusterRateLimitService service;
    final String key;
    /** Runs each time a stand-in decides, inside its decision. */
    volatile Runnable duringStandIn = () -> {};

    StandInFixture(PeersV1Grpc.PeersV1ImplBase peers) throws Exception {
      this(peers, List.of(SELF, OWNER));
    }

    /** Builds the fixture with {@code members} on the ring; {@code peers} serves the others. */
    StandInFixture(PeersV1Grpc.PeersV1ImplBase peers, List<String> members) throws Exception {
      two = HashRing.of(members, 64, PeerHash.FNV1A);
      String name = InProcessServerBuilder.generateName();
      owner = InProcessServerBuilder.forName(name).directExecutor().addService(peers).build().start();
      toOwner =
          new PeerClientPool(
              address ->
                  new PeerClient(
                      address,
                      InProcessChannelBuilder.forName(name).directExecutor().build(),
                      new PeerClientSettings(
                          1000, Duration.ofMillis(1), Duration.ofSeconds(5), true),
                      scheduler,
                      clock),
              clock);
      WindowCounterCheck counter = new WindowCounterCheck(store);
      BucketCheck local =
          r -> {
            if (r.hashKey().startsWith(ClusterRateLimitService.STAND_IN_PREFIX)) {
              duringStandIn.run();
            }
            return counter.decide(r);
          };
      service =
          new ClusterRateLimitService(
              SELF,
              () -> two,
              local,
              toOwner,
              new GlobalManager(
                  SELF, () -> two, toOwner, local, store, scheduler, clock,
                  Duration.ofMillis(100), 1000, Duration.ofSeconds(5)),
              clock,
              scheduler,
              Duration.ofMillis(10));
      service.reportTo(
          new dev.weir.core.metrics.WeirMetrics() {
            @Override
            public void standIn() {
              standIns.add("stand-in");
            }
          });
      String found = null;
      for (int i = 0; found == null; i++) {
        if (two.ownerOf("n_k" + i).equals(OWNER)) {
          found = "k" + i;
        }
      }
      key = found;
    }

    /** Returns a hit on {@link #key} with {@code limit}. */
    RateLimitRequest hit(long limit) {
      return RateLimitRequest.builder("n", key).hits(1).limit(limit).duration(60_000).build();
    }

    /** Checks {@code r} and returns its answer once 10 ms (the stand-in wait) have passed. */
    RateLimitResponse checkAndWait(RateLimitRequest r) {
      var answer = service.decide(List.of(r));
      scheduler.advance(Duration.ofMillis(10));
      return answer.join().get(0);
    }

    @Override
    public void close() {
      toOwner.close();
      owner.shutdownNow();
    }
  }

  /** A peer that answers every item with {@code remaining} left, and never while {@code paused}. */
  /**
   * An owner that answers as {@link #answering} does with 7 remaining, adding the metadata of each
   * item it is called with to {@code forwarded}.
   */
  private PeersV1Grpc.PeersV1ImplBase recordingMetadata(List<Map<String, String>> forwarded) {
    return new PeersV1Grpc.PeersV1ImplBase() {
      @Override
      public void getPeerRateLimits(
          GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
        request.getRequestsList().forEach(r -> forwarded.add(r.getMetadataMap()));
        answering(() -> false, 7).getPeerRateLimits(request, answer);
      }
    };
  }

  private PeersV1Grpc.PeersV1ImplBase answering(
      java.util.function.BooleanSupplier paused, long remaining) {
    return new PeersV1Grpc.PeersV1ImplBase() {
      @Override
      public void getPeerRateLimits(
          GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
        if (paused.getAsBoolean()) {
          return; // A long GC pause: the call is taken and never answered.
        }
        GetPeerRateLimitsResp.Builder out = GetPeerRateLimitsResp.newBuilder();
        request
            .getRequestsList()
            .forEach(
                r ->
                    out.addRateLimits(
                        dev.weir.proto.gubernator.RateLimitResp.newBuilder()
                            .setLimit(r.getLimit())
                            .setRemaining(remaining)
                            .setResetTime(clock.wallMillis() + 60_000)));
        answer.onNext(out.build());
        answer.onCompleted();
      }
    };
  }

  @Test
  void check_ownerDoesNotAnswer_standInEnforcesTheLimitFromItsOwnBucketAfterTheWait()
      throws Exception {
    try (StandInFixture f = new StandInFixture(answering(() -> true, 0))) {
      var first = f.service.decide(List.of(f.hit(2)));
      scheduler.advance(Duration.ofMillis(9));
      assertThat(first).as("before the wait").isNotDone();
      scheduler.advance(Duration.ofMillis(1));
      List<RateLimitResponse> answers = new java.util.ArrayList<>(first.join());
      answers.add(f.checkAndWait(f.hit(2)));
      answers.add(f.checkAndWait(f.hit(2)));

      assertThat(answers)
          .extracting(RateLimitResponse::status)
          .containsExactly(Status.UNDER_LIMIT, Status.UNDER_LIMIT, Status.OVER_LIMIT);
      assertThat(answers.get(0).metadata())
          .containsEntry("owner", OWNER)
          .containsEntry("stand_in", "true");
      assertThat(store.get(ClusterRateLimitService.STAND_IN_PREFIX + "n_" + f.key)).isPresent();
      assertThat(store.get("n_" + f.key)).as("the owner's bucket is not kept here").isEmpty();
      assertThat(f.standIns).hasSize(3);
    }
  }

  @Test
  void check_itemsOfTwoPausedOwnersInterleaved_eachStandInAnswersItsOwnItem() throws Exception {
    String other = "owner:2";
    try (StandInFixture f =
        new StandInFixture(answering(() -> true, 0), List.of(SELF, OWNER, other))) {
      String a1 = keyOwnedBy(f.two, OWNER, 0);
      String b = keyOwnedBy(f.two, other, 0);
      String a2 = keyOwnedBy(f.two, OWNER, 1);

      var answers =
          f.service.decide(List.of(limited(a1, 10), limited(b, 20), limited(a2, 30)));
      scheduler.advance(Duration.ofMillis(10));

      assertThat(answers.join())
          .as("each item's stand-in answer, in the items' order")
          .extracting(RateLimitResponse::limit)
          .containsExactly(10L, 20L, 30L);
    }
  }

  @Test
  void check_aStandInThrows_itsItemGetsTheErrorAndTheCallsOtherItemsTheirStandIns()
      throws Exception {
    String other = "owner:2";
    try (StandInFixture f =
        new StandInFixture(answering(() -> true, 0), List.of(SELF, OWNER, other))) {
      String a1 = keyOwnedBy(f.two, OWNER, 0);
      String b = keyOwnedBy(f.two, other, 0);
      java.util.concurrent.atomic.AtomicInteger decided =
          new java.util.concurrent.atomic.AtomicInteger();
      f.duringStandIn =
          () -> {
            if (decided.getAndIncrement() == 0) {
              throw new IllegalStateException("store full");
            }
          };

      var answers = f.service.decide(List.of(limited(a1, 10), limited(b, 20)));
      scheduler.advance(Duration.ofMillis(10));

      assertThat(answers).as("every item answered when the wait ends").isDone();
      List<RateLimitResponse> got = answers.join();
      assertThat(got.get(0).error()).contains("n_" + a1).contains("store full");
      assertThat(got.get(1).isError()).isFalse();
      assertThat(got.get(1).limit()).isEqualTo(20);
    }
  }

  @Test
  void check_countingAStandInThrows_everyItemIsStillAnswered() throws Exception {
    String other = "owner:2";
    try (StandInFixture f =
        new StandInFixture(answering(() -> true, 0), List.of(SELF, OWNER, other))) {
      f.service.reportTo(
          new dev.weir.core.metrics.WeirMetrics() {
            @Override
            public void standIn() {
              throw new IllegalStateException("meter registry closed");
            }
          });
      String a1 = keyOwnedBy(f.two, OWNER, 0);
      String b = keyOwnedBy(f.two, other, 0);

      var answers = f.service.decide(List.of(limited(a1, 10), limited(b, 20)));
      // The timer's task fails after answering; the scheduler logs such a failure.
      org.assertj.core.api.Assertions.catchThrowable(
          () -> scheduler.advance(Duration.ofMillis(10)));

      assertThat(answers).isDone();
      assertThat(answers.join()).extracting(RateLimitResponse::limit).containsExactly(10L, 20L);
    }
  }

  @Test
  void check_forwardFailsAndTheStandInThrows_theItemGetsTheErrorAtOnce() throws Exception {
    PeersV1Grpc.PeersV1ImplBase refusing =
        new PeersV1Grpc.PeersV1ImplBase() {
          @Override
          public void getPeerRateLimits(
              GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
            answer.onError(io.grpc.Status.UNAVAILABLE.asRuntimeException());
          }
        };
    try (StandInFixture f = new StandInFixture(refusing)) {
      f.duringStandIn =
          () -> {
            throw new IllegalStateException("store full");
          };

      var answer = f.service.decide(List.of(f.hit(2)));

      assertThat(answer).as("answered without waiting for a deadline").isDone();
      assertThat(answer.join().get(0).error()).contains("n_" + f.key).contains("store full");
    }
  }

  /**
   * Returns key number {@code skip} (from 0) among the keys {@code k<i>} whose hash key {@code
   * owner} owns on {@code ring}.
   */
  private static String keyOwnedBy(HashRing ring, String owner, int skip) {
    for (int i = 0, found = 0; ; i++) {
      if (ring.ownerOf("n_k" + i).equals(owner) && found++ == skip) {
        return "k" + i;
      }
    }
  }

  private static RateLimitRequest limited(String key, long limit) {
    return RateLimitRequest.builder("n", key).hits(1).limit(limit).duration(60_000).build();
  }

  @Test
  void check_ownerAnswersWhileTheStandInIsComputed_theStandInClaimedTheItemAndAnswersIt()
      throws Exception {
    List<Runnable> held = new CopyOnWriteArrayList<>();
    PeersV1Grpc.PeersV1ImplBase holding =
        new PeersV1Grpc.PeersV1ImplBase() {
          @Override
          public void getPeerRateLimits(
              GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
            held.add(
                () -> {
                  answer.onNext(
                      GetPeerRateLimitsResp.newBuilder()
                          .addRateLimits(
                              dev.weir.proto.gubernator.RateLimitResp.newBuilder()
                                  .setLimit(9)
                                  .setRemaining(7)
                                  .setResetTime(clock.wallMillis() + 60_000))
                          .build());
                  answer.onCompleted();
                });
          }
        };
    try (StandInFixture f = new StandInFixture(holding)) {
      f.duringStandIn = () -> held.forEach(Runnable::run);

      RateLimitResponse answer = f.checkAndWait(f.hit(9));

      assertThat(held).as("the owner answered during the stand-in").hasSize(1);
      assertThat(answer.metadata())
          .as("the stand-in that charged its bucket is the answer")
          .containsEntry("stand_in", "true");
      assertThat(f.standIns).hasSize(1);
    }
  }

  @Test
  void check_callerSetsThePeersHandedOnMark_itemForwardedWithoutIt() throws Exception {
    List<Map<String, String>> forwarded = new CopyOnWriteArrayList<>();
    try (StandInFixture f = new StandInFixture(recordingMetadata(forwarded))) {
      RateLimitRequest marked =
          f.hit(9).withMetadata(Map.of(PeerProtos.HANDED_ON, "10.9.9.9:1051", "team", "a"));

      f.checkAndWait(marked);

      assertThat(forwarded).singleElement().isEqualTo(Map.of("team", "a"));
    }
  }

  @Test
  void check_callerSetsThePeersRelayedMark_itemForwardedWithoutIt() throws Exception {
    List<Map<String, String>> forwarded = new CopyOnWriteArrayList<>();
    try (StandInFixture f = new StandInFixture(recordingMetadata(forwarded))) {
      RateLimitRequest marked =
          f.hit(9).withMetadata(Map.of(PeerProtos.RELAYED, "10.9.9.9:1051", "team", "a"));

      f.checkAndWait(marked);

      assertThat(forwarded).singleElement().isEqualTo(Map.of("team", "a"));
    }
  }

  @Test
  void check_callerSetsTheQueuedByMark_itemForwardedWithoutIt() throws Exception {
    List<Map<String, String>> forwarded = new CopyOnWriteArrayList<>();
    try (StandInFixture f = new StandInFixture(recordingMetadata(forwarded))) {
      RateLimitRequest underTheBound =
          f.hit(9).withMetadata(Map.of(PeerProtos.QUEUED_BY, "10.9.9.9:1051", "team", "a"));
      RateLimitRequest overTheBound =
          f.hit(9)
              .withMetadata(
                  Map.of(
                      PeerProtos.QUEUED_BY,
                      "10.9.9.9:1051",
                      "pad",
                      "p".repeat(PeerProtos.MAX_FORWARDED_METADATA_BYTES + 88)));

      f.checkAndWait(underTheBound);
      f.checkAndWait(overTheBound);

      assertThat(forwarded).containsExactly(Map.of("team", "a"), Map.of());
    }
  }

  @Test
  void check_ownerAnswersBeforeTheWait_itsAnswerKeptAndNoStandIn() throws Exception {
    try (StandInFixture f = new StandInFixture(answering(() -> false, 7))) {
      RateLimitResponse answer = f.checkAndWait(f.hit(9));
      scheduler.advance(Duration.ofMillis(20));

      assertThat(answer.remaining()).as("the owner's answer").isEqualTo(7);
      assertThat(answer.metadata()).containsEntry("owner", OWNER).doesNotContainKey("stand_in");
      assertThat(f.standIns).isEmpty();
      assertThat(store.size()).as("no stand-in bucket").isZero();
    }
  }

  @Test
  void check_answersForwardedToOneOwner_shareOneEncodedOwnerMetadata() throws Exception {
    try (StandInFixture f = new StandInFixture(answering(() -> false, 7))) {
      RateLimitResponse first = f.checkAndWait(f.hit(9));
      RateLimitResponse second = f.checkAndWait(f.hit(9));

      assertThat(first.metadata())
          .as("encoded once, so that writing each answer does not encode it again")
          .isInstanceOf(EncodedMetadata.class)
          .containsExactly(java.util.Map.entry("owner", OWNER))
          .isSameAs(second.metadata());
    }
  }

  @Test
  void check_ownerAnsweredThenPaused_standInContinuesFromWhatItsLastAnswerLeft() throws Exception {
    java.util.concurrent.atomic.AtomicBoolean paused =
        new java.util.concurrent.atomic.AtomicBoolean();
    try (StandInFixture f = new StandInFixture(answering(paused::get, 1))) {
      assertThat(f.checkAndWait(f.hit(10)).remaining()).as("the owner's answer").isEqualTo(1);
      paused.set(true);
      List<RateLimitResponse> standIns =
          List.of(f.checkAndWait(f.hit(10)), f.checkAndWait(f.hit(10)));

      assertThat(standIns)
          .as("one more admitted, as the owner last said, not a full limit of 10")
          .extracting(RateLimitResponse::status)
          .containsExactly(Status.UNDER_LIMIT, Status.OVER_LIMIT);
      assertThat(standIns)
          .allSatisfy(a -> assertThat(a.metadata()).containsEntry("stand_in", "true"));
    }
  }

  @Test
  void check_ownerAnswersWithAnError_standInEnforcesTheLimitAtOnceInsteadOfTheError()
      throws Exception {
    PeersV1Grpc.PeersV1ImplBase refusing =
        new PeersV1Grpc.PeersV1ImplBase() {
          @Override
          public void getPeerRateLimits(
              GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
            answer.onError(
                io.grpc.Status.UNAUTHENTICATED
                    .withDescription("peer secret does not match")
                    .asRuntimeException());
          }
        };
    try (StandInFixture f = new StandInFixture(refusing)) {
      List<RateLimitResponse> answers = new java.util.ArrayList<>();
      for (int i = 0; i < 3; i++) {
        answers.add(f.service.decide(List.of(f.hit(2))).join().get(0));
      }

      assertThat(answers)
          .as("decided on this node, without waiting for the stand-in timer")
          .extracting(RateLimitResponse::status)
          .containsExactly(Status.UNDER_LIMIT, Status.UNDER_LIMIT, Status.OVER_LIMIT);
      assertThat(answers)
          .allSatisfy(
              a ->
                  assertThat(a.metadata())
                      .containsEntry("stand_in", "true")
                      .doesNotContainKey("error"));
      assertThat(answers).allSatisfy(a -> assertThat(a.isError()).isFalse());
      assertThat(f.standIns).hasSize(3);
    }
  }

  @Test
  void check_standInAnsweredThenTheForwardFails_chargedOnceNotTwice() throws Exception {
    java.util.concurrent.atomic.AtomicReference<StreamObserver<GetPeerRateLimitsResp>> held =
        new java.util.concurrent.atomic.AtomicReference<>();
    PeersV1Grpc.PeersV1ImplBase slowThenRefusing =
        new PeersV1Grpc.PeersV1ImplBase() {
          @Override
          public void getPeerRateLimits(
              GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
            held.set(answer);
          }
        };
    try (StandInFixture f = new StandInFixture(slowThenRefusing)) {
      RateLimitResponse standIn = f.checkAndWait(f.hit(5));
      held.get().onError(io.grpc.Status.INTERNAL.asRuntimeException());

      assertThat(standIn.metadata()).containsEntry("stand_in", "true");
      assertThat(f.standIns).as("one stand-in for one item").hasSize(1);
      RateLimitResponse next = f.checkAndWait(f.hit(5));
      assertThat(next.remaining()).as("the first item took one hit, not two").isEqualTo(3);
    }
  }

  @Test
  void check_forwardFailsAndTheRingNamesANewOwner_theNewOwnerGetsTheItemAsTracingSentIt()
      throws Exception {
    String newOwner = "new-owner:1";
    HashRing before = HashRing.of(List.of(SELF, OWNER), 64, PeerHash.FNV1A);
    HashRing after = HashRing.of(List.of(SELF, newOwner), 64, PeerHash.FNV1A);
    String key = null;
    for (int i = 0; key == null; i++) {
      if (before.ownerOf("n_k" + i).equals(OWNER) && after.ownerOf("n_k" + i).equals(newOwner)) {
        key = "k" + i;
      }
    }
    List<Map<String, String>> received = new CopyOnWriteArrayList<>();
    String name = InProcessServerBuilder.generateName();
    Server server =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .addService(
                new PeersV1Grpc.PeersV1ImplBase() {
                  @Override
                  public void getPeerRateLimits(
                      GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
                    request.getRequestsList().forEach(r -> received.add(r.getMetadataMap()));
                    answering(() -> false, 7).getPeerRateLimits(request, answer);
                  }
                })
            .build()
            .start();
    String failingName = InProcessServerBuilder.generateName();
    Server failing =
        InProcessServerBuilder.forName(failingName)
            .directExecutor()
            .addService(
                new PeersV1Grpc.PeersV1ImplBase() {
                  @Override
                  public void getPeerRateLimits(
                      GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> answer) {
                    answer.onError(io.grpc.Status.UNAVAILABLE.asRuntimeException());
                  }
                })
            .build()
            .start();
    PeerClientPool routed =
        new PeerClientPool(
            address ->
                new PeerClient(
                    address,
                    InProcessChannelBuilder.forName(address.equals(newOwner) ? name : failingName)
                        .directExecutor()
                        .build(),
                    new PeerClientSettings(1000, Duration.ofMillis(1), Duration.ofSeconds(5), true),
                    scheduler,
                    clock),
            clock);
    // The route reads the ring once; the failure callback then sees the new one.
    Deque<HashRing> readings = new ArrayDeque<>(List.of(before));
    Supplier<HashRing> ring = () -> readings.isEmpty() ? after : readings.poll();
    WindowCounterCheck local = new WindowCounterCheck(store);
    ClusterRateLimitService service =
        new ClusterRateLimitService(
            SELF, ring, local, routed,
            new GlobalManager(
                SELF, ring, routed, local, store, scheduler, clock, Duration.ofMillis(100), 1000,
                Duration.ofSeconds(5)),
            clock, null, Duration.ZERO);
    service.traceWith(MARKING_TRACER);
    try {
      var answers =
          service.decide(
              List.of(
                  RateLimitRequest.builder("n", key).hits(1).limit(10).duration(60_000)
                      .metadata(Map.of("traceparent", CALLERS_TRACEPARENT, "team", "a"))
                      .build()));

      assertThat(answers.get(5, java.util.concurrent.TimeUnit.SECONDS).get(0).remaining())
          .as("the new owner's answer")
          .isEqualTo(7);
      assertThat(received).singleElement().isEqualTo(Map.of("team", "a", "traced", "yes"));
    } finally {
      routed.close();
      server.shutdownNow();
      failing.shutdownNow();
    }
  }

  private static final String CALLERS_TRACEPARENT =
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

  /** A tracer whose forwards send each item without its traceparent and marked traced. */
  private static final ClusterTracing MARKING_TRACER =
      new ClusterTracing() {
        @Override
        public Forward forward(String owner, List<RateLimitRequest> items) {
          return new Forward() {
            @Override
            public List<RateLimitRequest> items(List<RateLimitRequest> items) {
              return items.stream()
                  .map(
                      r -> {
                        Map<String, String> m = new java.util.LinkedHashMap<>(r.metadata());
                        m.remove("traceparent");
                        m.put("traced", "yes");
                        return r.withMetadata(m);
                      })
                  .toList();
            }

            @Override
            public void answered(RateLimitResponse answer) {}
          };
        }

        @Override
        public Span batch(String peer, List<RateLimitRequest> items) {
          return Span.NONE;
        }

        @Override
        public Span decide(RateLimitRequest item) {
          return Span.NONE;
        }
      };

  /** A tracer with bugs: recording a forwarded answer throws, and so does starting a decision. */
  private static final ClusterTracing FAILING_TRACER =
      new ClusterTracing() {
        @Override
        public Forward forward(String owner, List<RateLimitRequest> items) {
          return new Forward() {
            @Override
            public List<RateLimitRequest> items(List<RateLimitRequest> items) {
              return items;
            }

            @Override
            public void answered(RateLimitResponse answer) {
              throw new IllegalStateException("tracer bug");
            }
          };
        }

        @Override
        public Span batch(String peer, List<RateLimitRequest> items) {
          return Span.NONE;
        }

        @Override
        public Span decide(RateLimitRequest item) {
          throw new IllegalStateException("tracer bug");
        }
      };

  @Test
  void check_tracerThrowsRecordingTheOwnersAnswer_theItemIsAnsweredWithIt() throws Exception {
    try (StandInFixture f = new StandInFixture(answering(() -> false, 7))) {
      f.service.traceWith(FAILING_TRACER);

      var answers = f.service.decide(List.of(f.hit(9)));
      scheduler.advance(Duration.ofMillis(10));

      assertThat(answers).succeedsWithin(Duration.ofSeconds(5));
      assertThat(answers.join().get(0).remaining()).as("the owner's answer").isEqualTo(7);
      assertThat(f.standIns).isEmpty();
    }
  }

  @Test
  void decideAsOwner_tracerThrowsStartingTheSpan_itemsAreStillDecided() {
    ClusterRateLimitService service =
        service(() -> HashRing.of(List.of(SELF), 64, PeerHash.FNV1A));
    service.traceWith(FAILING_TRACER);

    List<RateLimitResponse> answers =
        service.decideAsOwner(
            List.of(RateLimitRequest.builder("n", "a").hits(1).limit(2).duration(1000).build()));

    assertThat(answers).extracting(RateLimitResponse::remaining).containsExactly(1L);
  }

  @Test
  void decideAsFormerOwner_oneItemThrows_itGetsItsErrorTheOthersTheirAnswersAndEverySpanEnds() {
    Supplier<HashRing> ring = () -> HashRing.of(List.of(SELF), 64, PeerHash.FNV1A);
    WindowCounterCheck counter = new WindowCounterCheck(store);
    BucketCheck local =
        r -> {
          if (r.uniqueKey().equals("b")) {
            throw new IllegalStateException("store broke");
          }
          return counter.decide(r);
        };
    GlobalManager global =
        new GlobalManager(
            SELF, ring, pool, local, store, scheduler, clock, Duration.ofMillis(100), 1000,
            Duration.ofSeconds(5));
    ClusterRateLimitService service =
        new ClusterRateLimitService(SELF, ring, local, pool, global, clock, null, Duration.ZERO);
    List<RateLimitResponse> ended = new CopyOnWriteArrayList<>();
    service.traceWith(endRecordingTracer(ended));

    List<RateLimitResponse> answers =
        service.decideAsFormerOwner(
            List.of(
                RateLimitRequest.builder("n", "a").hits(1).limit(2).duration(1000).build(),
                RateLimitRequest.builder("n", "b").hits(1).limit(2).duration(1000).build(),
                RateLimitRequest.builder("n", "c").hits(1).limit(2).duration(1000).build()),
            OWNER,
            new IllegalStateException("owner did not answer"));

    assertThat(answers).extracting(RateLimitResponse::remaining).containsExactly(1L, 0L, 1L);
    assertThat(answers)
        .extracting(RateLimitResponse::error)
        .containsExactly("", "error while answering rate limit for 'n_b': store broke", "");
    assertThat(ended).as("the answers the items' spans ended with").isEqualTo(answers);
  }

  /** A tracer whose decision spans add the answer they end with to {@code ended}. */
  private static ClusterTracing endRecordingTracer(List<RateLimitResponse> ended) {
    return new ClusterTracing() {
      @Override
      public Forward forward(String owner, List<RateLimitRequest> items) {
        return MARKING_TRACER.forward(owner, items);
      }

      @Override
      public Span batch(String peer, List<RateLimitRequest> items) {
        return Span.NONE;
      }

      @Override
      public Span decide(RateLimitRequest item) {
        return ended::add;
      }
    };
  }
}
