package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.common.util.concurrent.ListenableFuture;
import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.quota.QuotaPush;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.RecordingMetrics;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.AnnounceResp;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.ForwardAnswers;
import dev.weir.proto.gubernator.ForwardBatch;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.PushQuotaSharesReq;
import dev.weir.proto.gubernator.PushQuotaSharesResp;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.ReportQuotaUsageReq;
import dev.weir.proto.gubernator.ReportQuotaUsageResp;
import dev.weir.proto.gubernator.TokenBucketSnapshot;
import dev.weir.proto.gubernator.TransferBucketsReq;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import dev.weir.proto.gubernator.UpdatePeerGlobalsReq;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.inprocess.InProcessSocketAddress;
import io.grpc.stub.StreamObserver;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PeersServiceTest {

  private static final String SELF = "10.0.0.1:1051";

  private final FakeClock clock = new FakeClock();
  private final RecordingMetrics metrics = new RecordingMetrics();
  private final List<RateLimitRequest> seen = new ArrayList<>();
  private final List<String> notices = new ArrayList<>();
  private final List<UpdatePeerGlobal> applied = new ArrayList<>();
  private final List<BucketSnapshot> accepted = new ArrayList<>();
  private final List<QuotaUsage> reported = new ArrayList<>();
  private final List<QuotaPush> pushed = new ArrayList<>();
  private Server server;
  private ManagedChannel channel;
  private PeersV1Grpc.PeersV1BlockingStub stub;
  private volatile boolean serving = true;
  private CompletableFuture<Void> announced = CompletableFuture.completedFuture(null);
  private CompletableFuture<Void> prepared = CompletableFuture.completedFuture(null);
  private final List<SocketAddress> callers = new ArrayList<>();
  private volatile CompletableFuture<List<RateLimitResponse>> forwardedAnswers;

  private final PeerHandler handler =
      new PeerHandler() {
        @Override
        public List<RateLimitResponse> decideAsOwner(List<RateLimitRequest> requests) {
          seen.addAll(requests);
          return requests.stream()
              .map(
                  r ->
                      RateLimitResponse.of(Status.UNDER_LIMIT, r.limit(), r.limit() - r.hits(), 42))
              .toList();
        }

        @Override
        public CompletableFuture<List<RateLimitResponse>> answerForwarded(
            List<RateLimitRequest> requests) {
          if (forwardedAnswers == null) {
            return CompletableFuture.completedFuture(decideAsOwner(requests));
          }
          seen.addAll(requests);
          return forwardedAnswers;
        }

        @Override
        public void applyGlobals(List<UpdatePeerGlobal> globals) {
          applied.addAll(globals);
        }

        @Override
        public int acceptBuckets(List<BucketSnapshot> buckets, String from) {
          accepted.addAll(buckets);
          return buckets.size();
        }

        @Override
        public CompletableFuture<Void> announce(String address, boolean leaving) {
          notices.add((leaving ? "leaving " : "back ") + address);
          return announced;
        }

        @Override
        public CompletableFuture<Void> prepareReturn(String address, SocketAddress caller) {
          notices.add("prepare return " + address);
          callers.add(caller);
          return prepared;
        }

        @Override
        public List<QuotaShare> reportQuota(List<QuotaUsage> usages) {
          reported.addAll(usages);
          return usages.stream().map(u -> new QuotaShare(1500, 2, 0, 7, 1, "")).toList();
        }

        @Override
        public int deliverQuotaShares(List<QuotaPush> pushes) {
          pushed.addAll(pushes);
          return pushes.size();
        }

        @Override
        public boolean serving() {
          return serving;
        }
      };

  @BeforeEach
  void start() throws Exception {
    String name = InProcessServerBuilder.generateName();
    server =
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .addService(
                new PeersService(
                    handler, new PeerInputValidator(InputLimits.DEFAULTS, SELF), clock, metrics))
            .build()
            .start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    stub = PeersV1Grpc.newBlockingStub(channel);
  }

  @AfterEach
  void stop() {
    channel.shutdownNow();
    server.shutdownNow();
  }

  @Test
  void forwardStream_senderHalfClosesWhileABatchIsHandedOn_answerSentBeforeTheStreamEnds() {
    forwardedAnswers = new CompletableFuture<>();
    List<String> events = new CopyOnWriteArrayList<>();
    StreamObserver<ForwardCodec.Batch> batches =
        new PeersService(handler, clock)
            .forwardStream(
                new StreamObserver<>() {
                  @Override
                  public void onNext(ForwardCodec.Answers a) {
                    events.add("answers " + a.id() + " " + a.answers().size());
                  }

                  @Override
                  public void onError(Throwable t) {
                    events.add("error " + t);
                  }

                  @Override
                  public void onCompleted() {
                    events.add("end");
                  }
                });
    RateLimitRequest r =
        RateLimitRequest.builder("n", "k").hits(1).limit(5).duration(60_000).build();

    batches.onNext(new ForwardCodec.Batch(7, List.of(r)));
    batches.onCompleted();
    assertThat(events).as("the batch is still being handed on").isEmpty();
    forwardedAnswers.complete(List.of(RateLimitResponse.of(Status.UNDER_LIMIT, 5, 4, 42)));

    assertThat(events).containsExactly("answers 7 1", "end");
  }

  private static RateLimitReq item(int i) {
    return RateLimitReq.newBuilder()
        .setName("n")
        .setUniqueKey("k" + i)
        .setHits(1)
        .setLimit(5)
        .build();
  }

  @Test
  void getPeerRateLimits_items_answeredInOrderByHandler() {
    GetPeerRateLimitsResp resp =
        stub.getPeerRateLimits(
            GetPeerRateLimitsReq.newBuilder().addRequests(item(1)).addRequests(item(2)).build());
    assertThat(resp.getRateLimitsCount()).isEqualTo(2);
    assertThat(seen).extracting(RateLimitRequest::uniqueKey).containsExactly("k1", "k2");
    assertThat(resp.getRateLimits(0).getRemaining()).isEqualTo(4);
  }

  @Test
  void getPeerRateLimits_handlerAnswersLater_answerSentThenWithRefusedItemsInPlace()
      throws Exception {
    forwardedAnswers = new CompletableFuture<>();
    ListenableFuture<GetPeerRateLimitsResp> call =
        PeersV1Grpc.newFutureStub(channel)
            .getPeerRateLimits(
                GetPeerRateLimitsReq.newBuilder()
                    .addRequests(item(1))
                    .addRequests(item(2).toBuilder().setBehaviorValue(64))
                    .addRequests(item(3))
                    .build());
    assertThat(call.isDone()).isFalse();

    forwardedAnswers.complete(
        List.of(
            RateLimitResponse.of(Status.UNDER_LIMIT, 5, 3, 42),
            RateLimitResponse.of(Status.OVER_LIMIT, 5, 0, 42)));
    GetPeerRateLimitsResp resp = call.get(5, TimeUnit.SECONDS);

    assertThat(seen).extracting(RateLimitRequest::uniqueKey).containsExactly("k1", "k3");
    assertThat(resp.getRateLimitsList())
        .extracting(RateLimitResp::getStatusValue)
        .containsExactly(0, 0, 1);
    assertThat(resp.getRateLimits(0).getRemaining()).isEqualTo(3);
    assertThat(resp.getRateLimits(1).getError())
        .startsWith("field 'behavior' has unknown flags 64");
    assertThat(resp.getRateLimits(2).getError()).isEmpty();
  }

  private static dev.weir.proto.gubernator.QuotaUsage usage(String client, long allowed) {
    return dev.weir.proto.gubernator.QuotaUsage.newBuilder()
        .setRule(item(1).toBuilder().setHits(0).setLimit(600).setDuration(60_000))
        .setClient(client)
        .setAllowed(allowed)
        .setElapsedMs(5000)
        .setIntervalMs(5000)
        .build();
  }

  @Test
  void reportQuotaUsage_validAnsweredByHandlerInvalidWithTheirErrors() {
    ReportQuotaUsageResp resp =
        stub.reportQuotaUsage(
            ReportQuotaUsageReq.newBuilder()
                .addUsages(usage("10.0.0.2:1051/1.1", 40))
                .addUsages(usage("", 40))
                .addUsages(usage("10.0.0.2:1051/1.2", -3))
                .addUsages(usage("10.0.0.2:1051/1.3", 7))
                .build());

    assertThat(resp.getSharesList())
        .extracting(dev.weir.proto.gubernator.QuotaShare::getError)
        .satisfiesExactly(
            e -> assertThat(e).isEmpty(),
            e -> assertThat(e).isEqualTo("field 'client' cannot be empty"),
            e -> assertThat(e).startsWith("field 'allowed' is -3"),
            e -> assertThat(e).isEmpty());
    assertThat(resp.getShares(0).getMillirequestsPerSecond()).isEqualTo(1500);
    assertThat(reported).extracting(QuotaUsage::allowed).containsExactly(40L, 7L);
    assertThat(metrics.count("refused peer_invalid_input")).isEqualTo(2);
  }

  @Test
  void reportQuotaUsage_1001Usages_outOfRangeNothingHandled() {
    ReportQuotaUsageReq.Builder req = ReportQuotaUsageReq.newBuilder();
    for (int i = 0; i < 1001; i++) {
      req.addUsages(usage("10.0.0.2:1051/1." + i, 1));
    }

    assertThatThrownBy(() -> stub.reportQuotaUsage(req.build()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.OUT_OF_RANGE);
              assertThat(e.getStatus().getDescription()).contains("'usages'", "'1000'");
            });
    assertThat(reported).isEmpty();
  }

  @Test
  void pushQuotaShares_garbageDroppedValidDelivered() {
    dev.weir.proto.gubernator.QuotaPush valid =
        dev.weir.proto.gubernator.QuotaPush.newBuilder()
            .setKey("n_k1")
            .setClient("10.0.0.1:1051/1.1")
            .setShare(
                dev.weir.proto.gubernator.QuotaShare.newBuilder()
                    .setMillirequestsPerSecond(2000)
                    .setBurst(2)
                    .setEpoch(clock.wallMillis())
                    .setSequence(3))
            .build();

    PushQuotaSharesResp resp =
        stub.pushQuotaShares(
            PushQuotaSharesReq.newBuilder()
                .addPushes(valid.toBuilder().setKey(""))
                .addPushes(valid)
                .addPushes(
                    valid.toBuilder()
                        .setShare(valid.getShare().toBuilder().setMillirequestsPerSecond(-1)))
                .build());

    assertThat(resp.getDelivered()).isEqualTo(1);
    assertThat(pushed)
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.key()).isEqualTo("n_k1");
              assertThat(p.share().milliRate()).isEqualTo(2000);
              assertThat(p.share().sequence()).isEqualTo(3);
            });
    assertThat(metrics.count("refused peer_invalid_input")).isEqualTo(2);
  }

  @Test
  void getPeerRateLimits_probeOfServingNode_answeredEmpty() {
    GetPeerRateLimitsResp resp = stub.getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance());

    assertThat(resp.getRateLimitsCount()).isZero();
  }

  @Test
  void getPeerRateLimits_probeWhileNotServing_unavailableButItemsStillAnswered() {
    serving = false;

    assertThatThrownBy(() -> stub.getPeerRateLimits(GetPeerRateLimitsReq.getDefaultInstance()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.UNAVAILABLE);
              assertThat(e.getStatus().getDescription()).isEqualTo(PeersService.NOT_SERVING);
            });
    assertThat(
            stub.getPeerRateLimits(GetPeerRateLimitsReq.newBuilder().addRequests(item(1)).build())
                .getRateLimitsCount())
        .isEqualTo(1);
  }

  @Test
  void getPeerRateLimits_relayWhileNotServing_refusedWithTheUnsentTrailer() {
    serving = false;

    assertThatThrownBy(
            () ->
                stub.getPeerRateLimits(
                    GetPeerRateLimitsReq.newBuilder()
                        .setWeirRelayTo("127.0.0.1:7")
                        .addRequests(item(1))
                        .build()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode())
                  .isEqualTo(io.grpc.Status.Code.FAILED_PRECONDITION);
              assertThat(e.getStatus().getDescription()).isEqualTo(PeersService.NOT_SERVING);
              assertThat(e.getTrailers().get(UnsentRelay.TRAILER)).isEqualTo("1");
            });
  }

  @Test
  void announce_eachKind_reachesItsHandlerMethod() {
    stub.announce(AnnounceReq.newBuilder().setAddress("a:1").setPrepareReturn(true).build());
    stub.announce(AnnounceReq.newBuilder().setAddress("a:1").build());
    stub.announce(AnnounceReq.newBuilder().setAddress("a:1").setLeaving(true).build());

    assertThat(notices).containsExactly("prepare return a:1", "back a:1", "leaving a:1");
  }

  @Test
  void announce_handlerStillHandingOff_callReturnsAndIsAnsweredWhenItCompletes() throws Exception {
    announced = new CompletableFuture<>();

    ListenableFuture<AnnounceResp> answer =
        PeersV1Grpc.newFutureStub(channel)
            .announce(AnnounceReq.newBuilder().setAddress("a:1").setLeaving(true).build());

    assertThat(notices).containsExactly("leaving a:1");
    assertThat(answer.isDone()).isFalse();
    announced.complete(null);
    assertThat(answer.get(5, TimeUnit.SECONDS)).isEqualTo(AnnounceResp.getDefaultInstance());
  }

  @Test
  void announce_handOffFails_internalNamingTheFailure() {
    announced = CompletableFuture.failedFuture(new IllegalStateException("store closed"));

    assertThatThrownBy(
            () ->
                stub.announce(AnnounceReq.newBuilder().setAddress("a:1").setLeaving(true).build()))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageContaining("INTERNAL")
        .hasMessageContaining("store closed");
  }

  @Test
  void announce_prepareReturnTheHandlerRefuses_invalidArgumentWithItsReasonCounted() {
    String reason = "field 'address' is 'b:1', which discovery does not list";
    prepared = CompletableFuture.failedFuture(new RefusedPeerCall(reason));

    assertThatThrownBy(
            () ->
                stub.announce(
                    AnnounceReq.newBuilder().setAddress("b:1").setPrepareReturn(true).build()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.INVALID_ARGUMENT);
              assertThat(e.getStatus().getDescription()).isEqualTo(reason);
            });
    assertThat(metrics.count("refused peer_invalid_input")).isEqualTo(1);
    assertThat(callers)
        .as("the in-process transport's remote address, passed on")
        .singleElement()
        .isInstanceOf(InProcessSocketAddress.class);
  }

  @Test
  void forwardBatches_batchesOnOneStream_eachAnsweredWithItsIdAndTooLargeOnesRefusedAlone()
      throws Exception {
    List<ForwardAnswers> answers = new CopyOnWriteArrayList<>();
    CompletableFuture<Void> ended = new CompletableFuture<>();
    StreamObserver<ForwardBatch> batches =
        PeersV1Grpc.newStub(channel)
            .forwardBatches(
                new StreamObserver<>() {
                  @Override
                  public void onNext(ForwardAnswers a) {
                    answers.add(a);
                  }

                  @Override
                  public void onError(Throwable t) {
                    ended.completeExceptionally(t);
                  }

                  @Override
                  public void onCompleted() {
                    ended.complete(null);
                  }
                });
    ForwardBatch.Builder tooLarge = ForwardBatch.newBuilder().setId(8);
    for (int i = 0; i < 1001; i++) {
      tooLarge.addRequests(item(i));
    }

    batches.onNext(ForwardBatch.newBuilder().setId(7).addRequests(item(1)).build());
    batches.onNext(tooLarge.build());
    batches.onNext(
        ForwardBatch.newBuilder().setId(9).addRequests(item(2)).addRequests(item(3)).build());
    batches.onCompleted();
    ended.get(5, TimeUnit.SECONDS);

    assertThat(answers).extracting(ForwardAnswers::getId).containsExactly(7L, 8L, 9L);
    assertThat(answers.get(0).getRateLimitsList()).extracting(RateLimitResp::getRemaining)
        .containsExactly(4L);
    assertThat(answers.get(1).getErrorCode()).isEqualTo(io.grpc.Status.Code.OUT_OF_RANGE.value());
    assertThat(answers.get(1).getError()).isEqualTo(PeersService.TOO_LARGE);
    assertThat(answers.get(1).getRateLimitsCount()).isZero();
    assertThat(answers.get(2).getRateLimitsCount()).isEqualTo(2);
    assertThat(seen).hasSize(3);
    assertThat(metrics.events()).contains("refused too_many_items");
  }

  @Test
  void forwardBatches_senderStopsReadingAnswers_ownerStopsReadingBatchesUntilItReadsAgain() {
    List<Long> answered = new CopyOnWriteArrayList<>();
    ClientCall<ForwardBatch, ForwardAnswers> call =
        channel.newCall(PeersV1Grpc.getForwardBatchesMethod(), CallOptions.DEFAULT);
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(ForwardAnswers a) {
            answered.add(a.getId());
          }
        },
        new Metadata());
    call.request(1);
    List<Long> ids = new ArrayList<>();
    for (long id = 0; id < 20; id++) {
      call.sendMessage(ForwardBatch.newBuilder().setId(id).addRequests(item((int) id)).build());
      ids.add(id);
    }

    assertThat(answered).as("answers the sender read").containsExactly(0L);
    assertThat(seen).as("items the owner read while its answers were not read").hasSize(1);

    call.request(19);

    assertThat(answered).as("answers once the sender reads again").isEqualTo(ids);
    assertThat(seen).extracting(RateLimitRequest::uniqueKey).hasSize(20).endsWith("k19");
    call.cancel("done", null);
  }

  @Test
  void getPeerRateLimits_1001Items_outOfRangeWithGubernatorMessage() {
    GetPeerRateLimitsReq.Builder req = GetPeerRateLimitsReq.newBuilder();
    for (int i = 0; i < 1001; i++) {
      req.addRequests(item(i));
    }
    assertThatThrownBy(() -> stub.getPeerRateLimits(req.build()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.OUT_OF_RANGE);
              assertThat(e.getStatus().getDescription())
                  .isEqualTo("'PeerRequest.rate_limits' list too large; max size is '1000'");
            });
    assertThat(seen).isEmpty();
  }

  @Test
  void getPeerRateLimits_invalidItems_answeredWithErrorsOthersChecked() {
    GetPeerRateLimitsResp resp =
        stub.getPeerRateLimits(
            GetPeerRateLimitsReq.newBuilder()
                .addRequests(item(1))
                .addRequests(item(2).toBuilder().setCreatedAt(Long.MAX_VALUE))
                .addRequests(item(3).toBuilder().setUniqueKey("k".repeat(2000)))
                .addRequests(item(4))
                .build());

    assertThat(resp.getRateLimitsList())
        .extracting(RateLimitResp::getError)
        .satisfiesExactly(
            e -> assertThat(e).isEmpty(),
            e -> assertThat(e).startsWith("field 'created_at' is " + Long.MAX_VALUE),
            e -> assertThat(e).startsWith("field 'unique_key' is 2000 bytes long"),
            e -> assertThat(e).isEmpty());
    assertThat(seen).extracting(RateLimitRequest::uniqueKey).containsExactly("k1", "k4");
    assertThat(metrics.count("refused peer_invalid_input")).isEqualTo(2);
  }

  @Test
  void updatePeerGlobals_garbageDroppedValidApplied() {
    UpdatePeerGlobal valid = global("n_k", 5, 3);
    stub.updatePeerGlobals(
        UpdatePeerGlobalsReq.newBuilder()
            .addGlobals(global("", 5, 3))
            .addGlobals(valid)
            .addGlobals(global("n_x", 5, Long.MAX_VALUE))
            .addGlobals(valid.toBuilder().setAlgorithmValue(99))
            .build());

    assertThat(applied).containsExactly(valid);
    assertThat(metrics.count("refused peer_invalid_input")).isEqualTo(3);
  }

  @Test
  void updatePeerGlobals_1001Items_outOfRangeNothingApplied() {
    UpdatePeerGlobalsReq.Builder req = UpdatePeerGlobalsReq.newBuilder();
    for (int i = 0; i < 1001; i++) {
      req.addGlobals(global("n_" + i, 5, 3));
    }

    assertThatThrownBy(() -> stub.updatePeerGlobals(req.build()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.OUT_OF_RANGE));
    assertThat(applied).isEmpty();
    assertThat(metrics.count("refused too_many_items")).isEqualTo(1);
  }

  @Test
  void transferBuckets_garbageDroppedValidAccepted() {
    BucketSnapshot valid = bucket("n_k", 4);
    stub.transferBuckets(
        TransferBucketsReq.newBuilder()
            .setFrom("10.0.0.2:1051")
            .addBuckets(valid)
            .addBuckets(bucket("", 4))
            .addBuckets(bucket("n_k2", Long.MIN_VALUE))
            .addBuckets(BucketSnapshot.newBuilder().setKey("n_k3"))
            .build());

    assertThat(accepted).containsExactly(valid);
    assertThat(metrics.count("refused peer_invalid_input")).isEqualTo(3);
  }

  @Test
  void transferBuckets_senderNotHostPort_invalidArgumentNothingAccepted() {
    assertThatThrownBy(
            () ->
                stub.transferBuckets(
                    TransferBucketsReq.newBuilder()
                        .setFrom("")
                        .addBuckets(bucket("n_k", 4))
                        .build()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.INVALID_ARGUMENT);
              assertThat(e.getStatus().getDescription()).isEqualTo("field 'from' cannot be empty");
            });
    assertThat(accepted).isEmpty();
  }

  @Test
  void announce_namingThisNodeOrMalformed_invalidArgumentNoNotice() {
    for (String address : List.of(SELF, "", "no-port", "x".repeat(600) + ":1")) {
      assertThatThrownBy(
              () ->
                  stub.announce(
                      AnnounceReq.newBuilder().setAddress(address).setLeaving(true).build()))
          .isInstanceOfSatisfying(
              StatusRuntimeException.class,
              e ->
                  assertThat(e.getStatus().getCode())
                      .isEqualTo(io.grpc.Status.Code.INVALID_ARGUMENT));
    }
    assertThat(notices).isEmpty();
    assertThat(metrics.count("refused peer_invalid_input")).isEqualTo(4);
  }

  private UpdatePeerGlobal global(String key, long limit, long resetOffset) {
    return UpdatePeerGlobal.newBuilder()
        .setKey(key)
        .setAlgorithmValue(0)
        .setDuration(60_000)
        .setCreatedAt(clock.wallMillis())
        .setStatus(
            RateLimitResp.newBuilder()
                .setLimit(limit)
                .setRemaining(limit - 1)
                .setResetTime(
                    resetOffset == Long.MAX_VALUE
                        ? Long.MAX_VALUE
                        : clock.wallMillis() + resetOffset))
        .build();
  }

  private BucketSnapshot bucket(String key, long remaining) {
    return BucketSnapshot.newBuilder()
        .setKey(key)
        .setTokenBucket(
            TokenBucketSnapshot.newBuilder()
                .setLimit(5)
                .setDuration(60_000)
                .setRemaining(remaining)
                .setCreatedAt(clock.wallMillis())
                .setExpireAt(clock.wallMillis() + 60_001))
        .build();
  }

  @Test
  void protos_requestRoundTrip_keepsEveryField() {
    RateLimitRequest r =
        new RateLimitRequest(
            "n",
            "k",
            -3,
            10,
            60_000,
            3,
            Behavior.GLOBAL | Behavior.DRAIN_OVER_LIMIT,
            7,
            123,
            Map.of("traceparent", "x"));
    assertThat(PeerProtos.fromProto(PeerProtos.toProto(r))).isEqualTo(r);
    RateLimitRequest unset = r.withCreatedAt(0);
    assertThat(PeerProtos.toProto(unset).hasCreatedAt()).isFalse();
    assertThat(PeerProtos.fromProto(PeerProtos.toProto(unset))).isEqualTo(unset);
  }

  @Test
  void protos_responseRoundTrip_keepsEveryField() {
    RateLimitResponse r =
        new RateLimitResponse(Status.OVER_LIMIT, 10, 0, 99, "", Map.of("owner", "a:1"));
    assertThat(PeerProtos.fromProto(PeerProtos.toProto(r))).isEqualTo(r);
  }

  @Test
  void protos_snapshotRoundTrip_everyAlgorithmExact() {
    List<dev.weir.core.engine.BucketState> states =
        List.of(
            new TokenBucketState(Status.OVER_LIMIT, 10, 1000, 0, 5, Long.MAX_VALUE),
            new LeakyBucketState(10, 1000, 20, 19, 7, 8),
            new FixedWindowState(10, 1000, 2000, 11, 3000),
            new SlidingWindowState(10, 1000, 2000, 4, 5, 4000));
    for (dev.weir.core.engine.BucketState s : states) {
      BucketSnapshot snap = PeerProtos.toSnapshot("n_k", s);
      assertThat(snap.getKey()).isEqualTo("n_k");
      assertThat(PeerProtos.fromSnapshot(snap)).contains(s);
    }
    assertThat(PeerProtos.fromSnapshot(BucketSnapshot.newBuilder().setKey("x").build())).isEmpty();
  }
}
