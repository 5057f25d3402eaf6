package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.cluster.batch.Batcher;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.proto.gubernator.ForwardAnswers;
import dev.weir.proto.gubernator.ForwardBatch;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.RateLimitResp;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ForwardStreamTest {

  private static final Duration TIMEOUT = Duration.ofMillis(500);
  private static final Duration STALL_AFTER = Duration.ofSeconds(2);

  private final FakeClock clock = new FakeClock();
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final AtomicInteger streamsOpened = new AtomicInteger();
  private final AtomicInteger halfClosed = new AtomicInteger();
  private final AtomicInteger cancelled = new AtomicInteger();
  private final AtomicInteger stalls = new AtomicInteger();
  private final List<ForwardBatch> received = new CopyOnWriteArrayList<>();
  private final List<StreamObserver<ForwardAnswers>> answerStreams = new CopyOnWriteArrayList<>();
  private Server server;
  private ManagedChannel channel;

  @AfterEach
  void stop() {
    if (channel != null) {
      channel.shutdownNow();
    }
    if (server != null) {
      server.shutdownNow();
    }
  }

  /** A peer that records every batch and answers none, nor ends a stream, until the test does. */
  private final PeersV1Grpc.PeersV1ImplBase holding =
      new PeersV1Grpc.PeersV1ImplBase() {
        @Override
        public StreamObserver<ForwardBatch> forwardBatches(StreamObserver<ForwardAnswers> answers) {
          streamsOpened.incrementAndGet();
          answerStreams.add(answers);
          return new StreamObserver<>() {
            @Override
            public void onNext(ForwardBatch batch) {
              received.add(batch);
            }

            @Override
            public void onError(Throwable t) {
              cancelled.incrementAndGet();
            }

            @Override
            public void onCompleted() {
              halfClosed.incrementAndGet();
            }
          };
        }
      };

  private ForwardStream streamTo(PeersV1Grpc.PeersV1ImplBase peer) throws Exception {
    String name = InProcessServerBuilder.generateName();
    server = InProcessServerBuilder.forName(name).directExecutor().addService(peer).build().start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    return streamOpenedBy(this::openCall);
  }

  /** Opens a {@code ForwardBatches} call on {@link #channel}, answered to {@code answers}. */
  private StreamObserver<ForwardCodec.Batch> openCall(
      StreamObserver<ForwardCodec.Answers> answers) {
    return ClientCalls.asyncBidiStreamingCall(
        channel.newCall(PeerMethods.FORWARD_BATCHES, CallOptions.DEFAULT), answers);
  }

  /** Returns a stream whose calls {@code opener} opens, with the test's timeouts. */
  private ForwardStream streamOpenedBy(
      java.util.function.Function<
              StreamObserver<ForwardCodec.Answers>, StreamObserver<ForwardCodec.Batch>>
          opener) {
    return new ForwardStream(
        opener, scheduler, clock, TIMEOUT, STALL_AFTER, stalls::incrementAndGet);
  }

  /** A call's request side whose {@code onNext} a test defines; the rest goes to {@code call}. */
  private abstract static class SendingTo implements StreamObserver<ForwardCodec.Batch> {
    final StreamObserver<ForwardCodec.Batch> call;

    SendingTo(StreamObserver<ForwardCodec.Batch> call) {
      this.call = call;
    }

    @Override
    public void onError(Throwable t) {
      call.onError(t);
    }

    @Override
    public void onCompleted() {
      call.onCompleted();
    }
  }

  private static List<RateLimitRequest> items(long... limits) {
    List<RateLimitRequest> out = new ArrayList<>();
    for (long limit : limits) {
      out.add(RateLimitRequest.builder("n", "k" + limit).hits(1).limit(limit).duration(1000).build());
    }
    return out;
  }

  /** Answers the batch the peer received {@code index}-th with each item's limit as remaining. */
  private void answer(int stream, int index) {
    ForwardBatch batch = received.get(index);
    ForwardAnswers.Builder out = ForwardAnswers.newBuilder().setId(batch.getId());
    batch
        .getRequestsList()
        .forEach(r -> out.addRateLimits(RateLimitResp.newBuilder().setRemaining(r.getLimit())));
    answerStreams.get(stream).onNext(out.build());
  }

  private static List<Long> remaining(CompletableFuture<List<RateLimitResponse>> answer) {
    return answer.join().stream().map(RateLimitResponse::remaining).toList();
  }

  @Test
  void send_batchesInFlightTogether_shareOneStreamAndEachGetsItsOwnAnswersOutOfOrder()
      throws Exception {
    ForwardStream stream = streamTo(holding);
    CompletableFuture<List<RateLimitResponse>> first = stream.send(items(1, 2));
    CompletableFuture<List<RateLimitResponse>> second = stream.send(items(3));

    answer(0, 1);
    answer(0, 0);

    assertThat(streamsOpened).hasValue(1);
    assertThat(remaining(first)).containsExactly(1L, 2L);
    assertThat(remaining(second)).containsExactly(3L);
    scheduler.advance(TIMEOUT);
    assertThat(scheduler.pending()).as("answered batches leave no deadline timer").isZero();
  }

  @Test
  void send_manyBatchesAnsweredInTime_armOneDeadlineTimerBetweenThem() throws Exception {
    ForwardStream stream = streamTo(holding);
    List<CompletableFuture<List<RateLimitResponse>>> sent = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      sent.add(stream.send(items(i)));
      answer(0, i);
    }

    assertThat(sent).allMatch(CompletableFuture::isDone);
    assertThat(scheduler.pending()).isEqualTo(1);
  }

  @Test
  void send_batchesSentAtDifferentTimes_eachFailsAtItsOwnDeadline() throws Exception {
    ForwardStream stream = streamTo(holding);
    CompletableFuture<List<RateLimitResponse>> early = stream.send(items(1));
    scheduler.advance(Duration.ofMillis(200));
    CompletableFuture<List<RateLimitResponse>> late = stream.send(items(2));

    scheduler.advance(TIMEOUT.minusMillis(200));
    assertThat(early).isCompletedExceptionally();
    assertThat(late).isNotDone();
    scheduler.advance(Duration.ofMillis(200).minusNanos(1));
    assertThat(late).isNotDone();
    scheduler.advance(Duration.ofNanos(1));

    assertThatThrownBy(late::join).hasMessageContaining("DEADLINE_EXCEEDED");
    assertThat(scheduler.pending()).isZero();
  }

  @Test
  void send_peerRefusesOneBatch_onlyThatBatchFailsWithThePeersStatus() throws Exception {
    ForwardStream stream = streamTo(holding);
    CompletableFuture<List<RateLimitResponse>> refused = stream.send(items(1));
    CompletableFuture<List<RateLimitResponse>> fine = stream.send(items(2));

    answerStreams
        .get(0)
        .onNext(
            ForwardAnswers.newBuilder()
                .setId(received.get(0).getId())
                .setErrorCode(Status.Code.OUT_OF_RANGE.value())
                .setError("list too large")
                .build());
    answer(0, 1);

    assertThatThrownBy(refused::join)
        .hasCauseInstanceOf(StatusRuntimeException.class)
        .hasMessageContaining("OUT_OF_RANGE: list too large");
    assertThat(remaining(fine)).containsExactly(2L);
  }

  @Test
  void send_noAnswerWithinTheTimeout_failsDeadlineExceededAndALateAnswerIsIgnored()
      throws Exception {
    ForwardStream stream = streamTo(holding);
    CompletableFuture<List<RateLimitResponse>> batch = stream.send(items(1));

    scheduler.advance(TIMEOUT.minusNanos(1));
    assertThat(batch).isNotDone();
    scheduler.advance(Duration.ofNanos(1));

    assertThatThrownBy(batch::join)
        .hasMessageContaining("DEADLINE_EXCEEDED: no answer on the forwarding stream within");
    answer(0, 0);
    CompletableFuture<List<RateLimitResponse>> next = stream.send(items(2));
    answer(0, 1);
    assertThat(remaining(next)).containsExactly(2L);
  }

  @Test
  void send_streamBreaksWithBatchesWaiting_theyFailAndTheNextBatchOpensANewStream()
      throws Exception {
    ForwardStream stream = streamTo(holding);
    CompletableFuture<List<RateLimitResponse>> waiting = stream.send(items(1));

    answerStreams.get(0).onError(Status.UNAVAILABLE.withDescription("peer going").asException());

    assertThatThrownBy(waiting::join).hasMessageContaining("UNAVAILABLE: peer going");
    CompletableFuture<List<RateLimitResponse>> next = stream.send(items(2));
    assertThat(streamsOpened).hasValue(2);
    answer(1, 1);
    assertThat(remaining(next)).containsExactly(2L);
  }

  @Test
  void send_streamCannotBeOpened_batchFailsAndTheNextOneOpensAStream() throws Exception {
    streamTo(holding);
    AtomicInteger opens = new AtomicInteger();
    ForwardStream stream =
        streamOpenedBy(
            answers -> {
              if (opens.getAndIncrement() == 0) {
                throw new IllegalStateException("Resolution is pending");
              }
              return openCall(answers);
            });

    CompletableFuture<List<RateLimitResponse>> first = stream.send(items(1));
    CompletableFuture<List<RateLimitResponse>> next = stream.send(items(2));

    assertThatThrownBy(first::join)
        .hasMessageContaining("UNAVAILABLE: could not open the forwarding stream")
        .hasMessageContaining("Resolution is pending");
    answer(0, 0);
    assertThat(remaining(next)).containsExactly(2L);
    stream.close();
    assertThat(halfClosed).hasValue(1);
  }

  @Test
  void send_callEndsAsItStarts_batchFailsWithItsEndAndTheNextOneOpensANewStream()
      throws Exception {
    streamTo(holding);
    AtomicInteger opens = new AtomicInteger();
    ForwardStream stream =
        streamOpenedBy(
            answers -> {
              StreamObserver<ForwardCodec.Batch> call = openCall(answers);
              if (opens.getAndIncrement() == 0) { // a channel that fails calls on the spot
                answers.onError(Status.UNAVAILABLE.withDescription("no route").asException());
              }
              return call;
            });

    CompletableFuture<List<RateLimitResponse>> first = stream.send(items(1));
    CompletableFuture<List<RateLimitResponse>> next = stream.send(items(2));

    assertThatThrownBy(first::join).hasMessageContaining("UNAVAILABLE: no route");
    assertThat(opens).hasValue(2);
    answer(1, 0);
    assertThat(remaining(next)).containsExactly(2L);
  }

  @Test
  void send_streamRefusesTheBatch_batchFailsAtOnceAndTheNextOneOpensANewStream()
      throws Exception {
    streamTo(holding);
    AtomicInteger opens = new AtomicInteger();
    ForwardStream stream =
        streamOpenedBy(
            answers -> {
              StreamObserver<ForwardCodec.Batch> call = openCall(answers);
              if (opens.getAndIncrement() > 0) {
                return call;
              }
              return new SendingTo(call) {
                @Override
                public void onNext(ForwardCodec.Batch batch) {
                  throw new IllegalStateException("call was cancelled");
                }
              };
            });

    CompletableFuture<List<RateLimitResponse>> first = stream.send(items(1));

    assertThat(first).isCompletedExceptionally();
    assertThatThrownBy(first::join).hasMessageContaining("refused the batch");
    CompletableFuture<List<RateLimitResponse>> next = stream.send(items(2));
    assertThat(streamsOpened).hasValue(2);
    answer(1, 0);
    assertThat(remaining(next)).containsExactly(2L);
  }

  @Test
  void send_batchAnsweredWithinTheSend_laterBatchesStallTimeCountsFromThemNotFromIt()
      throws Exception {
    streamTo(holding);
    AtomicInteger sent = new AtomicInteger();
    ForwardStream stream =
        streamOpenedBy(
            answers ->
                new SendingTo(openCall(answers)) {
                  @Override
                  public void onNext(ForwardCodec.Batch batch) {
                    call.onNext(batch);
                    if (sent.getAndIncrement() == 0) { // a peer on this thread answers at once
                      answers.onNext(
                          ForwardCodec.Answers.of(
                              batch.id(),
                              List.of(
                                  RateLimitResponse.of(
                                      dev.weir.core.model.Status.UNDER_LIMIT, 1, 1, 0))));
                    }
                  }
                });
    assertThat(stream.send(items(1))).isDone();
    elapse(STALL_AFTER.multipliedBy(2));

    CompletableFuture<List<RateLimitResponse>> held = stream.send(items(2));
    elapse(TIMEOUT.plusMillis(50));

    assertThatThrownBy(held::join)
        .hasMessageContaining("no answer on the forwarding stream within");
    assertThat(stalls).as("unanswered for 0.5 s, not for the stall time").hasValue(0);
  }

  /** Lets {@code time} pass in 50 ms steps, so timers run at about their due time. */
  private void elapse(Duration time) {
    for (Duration left = time; left.compareTo(Duration.ZERO) > 0; left = left.minusMillis(50)) {
      scheduler.advance(left.compareTo(Duration.ofMillis(50)) < 0 ? left : Duration.ofMillis(50));
    }
  }

  @Test
  void send_batchesUnansweredForTheStallTime_dropTheStreamAndTheNextBatchOpensANewOne()
      throws Exception {
    ForwardStream stream = streamTo(holding);
    List<CompletableFuture<List<RateLimitResponse>>> sent = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      sent.add(stream.send(items(i)));
      elapse(Duration.ofMillis(400));
    }
    assertThat(stalls).as("1.6 s without an answer").hasValue(0);
    CompletableFuture<List<RateLimitResponse>> notYetDue = stream.send(items(5));

    elapse(Duration.ofMillis(100));

    assertThat(stalls).as("the batch sent at 1.6 s is due at 2.1 s").hasValue(1);
    assertThat(cancelled).as("the stalled call is cancelled").hasValue(1);
    assertThatThrownBy(notYetDue::join)
        .hasMessageContaining("DEADLINE_EXCEEDED: no answer on the forwarding stream for PT2.1S")
        .hasMessageContaining("the stream and its connection are dropped")
        .hasRootCauseInstanceOf(ForwardStream.Stalled.class);
    assertThat(sent).allMatch(CompletableFuture::isCompletedExceptionally);
    assertThat(scheduler.pending()).as("a dropped stream leaves no timer").isZero();
    CompletableFuture<List<RateLimitResponse>> next = stream.send(items(6));
    assertThat(streamsOpened).hasValue(2);
    answer(1, 6);
    assertThat(remaining(next)).containsExactly(6L);
  }

  @Test
  void send_anAnswerInTimeWithinTheStallTime_keepsTheStream() throws Exception {
    ForwardStream stream = streamTo(holding);
    CompletableFuture<List<RateLimitResponse>> lost = stream.send(items(1));
    elapse(Duration.ofMillis(1000));
    CompletableFuture<List<RateLimitResponse>> inTime = stream.send(items(2));
    elapse(Duration.ofMillis(400));
    answer(0, 1);
    elapse(Duration.ofMillis(100));
    stream.send(items(3));
    elapse(Duration.ofMillis(1900));

    assertThat(lost).isCompletedExceptionally();
    assertThat(remaining(inTime)).containsExactly(2L);
    assertThat(stalls).as("the answer in time showed the stream serving at 1.4 s").hasValue(0);
    CompletableFuture<List<RateLimitResponse>> next = stream.send(items(4));
    assertThat(streamsOpened).hasValue(1);
    answer(0, 3);
    assertThat(remaining(next)).containsExactly(4L);
  }

  @Test
  void send_peerAnswersEveryBatchOnlyAfterItsDeadline_streamIsStalledAfterTheStallTime()
      throws Exception {
    ForwardStream stream = streamTo(holding);
    List<CompletableFuture<List<RateLimitResponse>>> sent = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      sent.add(stream.send(items(i)));
      elapse(TIMEOUT.plusMillis(100));
      assertThat(sent.get(i)).isCompletedExceptionally();
      if (stalls.get() == 0) {
        answer(0, i); // late: the batch failed 100 ms ago
      }
    }

    assertThat(stalls)
        .as("no batch answered in time for 2.4 s: late answers do not show the stream serving")
        .hasValue(1);
    assertThatThrownBy(sent.get(3)::join)
        .hasMessageContaining("no answer on the forwarding stream for PT2.3S")
        .hasRootCauseInstanceOf(ForwardStream.Stalled.class);
    CompletableFuture<List<RateLimitResponse>> next = stream.send(items(4));
    assertThat(streamsOpened).hasValue(2);
    answer(1, 4);
    assertThat(remaining(next)).containsExactly(4L);
  }

  @Test
  void send_peerWithoutStreams_batchFailsAsUnsupportedAtOnceAndSoDoLaterOnes() throws Exception {
    ForwardStream stream = streamTo(new PeersV1Grpc.PeersV1ImplBase() {});

    CompletableFuture<List<RateLimitResponse>> first = stream.send(items(1));

    assertThatThrownBy(first::join).hasCauseInstanceOf(ForwardStream.Unsupported.class);
    assertThat(stream.unsupported()).isTrue();
    assertThatThrownBy(stream.send(items(2))::join)
        .hasCauseInstanceOf(ForwardStream.Unsupported.class);
  }

  @Test
  void close_batchesWaiting_areStillAnsweredBeforeTheStreamEnds() throws Exception {
    ForwardStream stream = streamTo(holding);
    CompletableFuture<List<RateLimitResponse>> waiting = stream.send(items(1));

    stream.close();
    assertThat(halfClosed).hasValue(1);
    answer(0, 0);
    answerStreams.get(0).onCompleted();

    assertThat(remaining(waiting)).containsExactly(1L);
  }

  @Test
  void send_afterClose_isRefusedAndOpensNoStream() throws Exception {
    ForwardStream stream = streamTo(holding);
    CompletableFuture<List<RateLimitResponse>> waiting = stream.send(items(1));
    stream.close();

    CompletableFuture<List<RateLimitResponse>> late = stream.send(items(2));

    assertThat(late).isCompletedExceptionally();
    assertThatThrownBy(late::join)
        .hasMessageContaining("CANCELLED: the forwarding stream was closed")
        .hasMessageContaining("the batch was not sent");
    assertThat(streamsOpened).as("no stream opened after close, none left un-half-closed").hasValue(1);
    assertThat(halfClosed).hasValue(1);
    answer(0, 0);
    assertThat(remaining(waiting)).containsExactly(1L);
  }

  @Test
  void send_afterCloseOfAStreamNeverOpened_isRefusedAndOpensNoStream() throws Exception {
    ForwardStream stream = streamTo(holding);
    stream.close();

    CompletableFuture<List<RateLimitResponse>> late = stream.send(items(1));
    assertThat(late).isCompletedExceptionally();
    assertThatThrownBy(late::join)
        .hasMessageContaining("the forwarding stream was closed");
    assertThat(streamsOpened).hasValue(0);
  }

  @Test
  void send_whileAStalledStreamIsBeingDropped_opensNoStreamBeforeTheConnectionIsDropped()
      throws Exception {
    streamTo(holding);
    List<CompletableFuture<List<RateLimitResponse>>> duringDrop = new CopyOnWriteArrayList<>();
    List<Integer> streamsAtStall = new CopyOnWriteArrayList<>();
    ForwardStream[] stream = new ForwardStream[1];
    stream[0] =
        new ForwardStream(
            answers ->
                new SendingTo(openCall(answers)) {
                  @Override
                  public void onNext(ForwardCodec.Batch batch) {
                    call.onNext(batch);
                  }

                  @Override
                  public void onError(Throwable t) {
                    // Another thread's batch, sent as the stalled call is cancelled.
                    duringDrop.add(stream[0].send(items(99)));
                    call.onError(t);
                  }
                },
            scheduler,
            clock,
            TIMEOUT,
            STALL_AFTER,
            () -> streamsAtStall.add(streamsOpened.get()));
    CompletableFuture<List<RateLimitResponse>> first = stream[0].send(items(1));
    elapse(Duration.ofMillis(1600));
    stream[0].send(items(2));

    elapse(Duration.ofMillis(500));

    assertThat(streamsAtStall).as("streams opened when the connection was dropped").containsExactly(1);
    assertThat(first).isCompletedExceptionally();
    assertThat(duringDrop).hasSize(1);
    assertThat(duringDrop.get(0)).isCompletedExceptionally();
    assertThatThrownBy(duringDrop.get(0)::join)
        .hasMessageContaining("the stream and its connection are dropped");
    CompletableFuture<List<RateLimitResponse>> next = stream[0].send(items(3));
    assertThat(streamsOpened).hasValue(2);
    answer(1, 2);
    assertThat(remaining(next)).containsExactly(3L);
  }

  /**
   * A call's request side that records what is called on it and, as grpc-java's {@code
   * ClientCallImpl} does, refuses a half-close (or a message) once the call was cancelled.
   */
  private static final class RecordingCall implements StreamObserver<ForwardCodec.Batch> {
    final List<String> calls = new CopyOnWriteArrayList<>();
    private volatile boolean cancelCalled;

    @Override
    public void onNext(ForwardCodec.Batch batch) {
      if (cancelCalled) {
        throw new IllegalStateException("call was cancelled");
      }
      calls.add("onNext");
    }

    @Override
    public void onError(Throwable t) {
      cancelCalled = true;
      calls.add("onError");
    }

    @Override
    public void onCompleted() {
      if (cancelCalled) {
        throw new IllegalStateException("call was cancelled");
      }
      calls.add("onCompleted");
    }
  }

  /**
   * Returns a stream on {@code call} whose {@code onStall} closes it (as a client closed while the
   * stalled stream is being dropped), recording whatever that close throws in {@code closeErrors}.
   */
  private ForwardStream closedOnStall(RecordingCall call, List<Throwable> closeErrors) {
    ForwardStream[] stream = new ForwardStream[1];
    stream[0] =
        new ForwardStream(
            answers -> call,
            scheduler,
            clock,
            TIMEOUT,
            STALL_AFTER,
            () -> {
              stalls.incrementAndGet();
              try {
                stream[0].close();
              } catch (RuntimeException e) {
                closeErrors.add(e);
              }
            });
    return stream[0];
  }

  @Test
  void close_whileADeadlineDropsTheStalledStream_doesNotHalfCloseTheCancelledCall() {
    RecordingCall call = new RecordingCall();
    List<Throwable> closeErrors = new CopyOnWriteArrayList<>();
    ForwardStream stream = closedOnStall(call, closeErrors);
    stream.send(items(1));
    elapse(Duration.ofMillis(1600));
    CompletableFuture<List<RateLimitResponse>> second = stream.send(items(2));

    elapse(Duration.ofMillis(500));

    assertThat(stalls).hasValue(1);
    assertThat(closeErrors).as("close() of a stream being dropped").isEmpty();
    assertThat(call.calls)
        .as("the stalled call is cancelled and never half-closed after")
        .containsExactly("onNext", "onNext", "onError");
    assertThatThrownBy(second::join).hasRootCauseInstanceOf(ForwardStream.Stalled.class);
    assertThatThrownBy(stream.send(items(3))::join)
        .hasMessageContaining("the forwarding stream was closed");
    stream.close();
    assertThat(call.calls).containsExactly("onNext", "onNext", "onError");
  }

  @Test
  void close_whileASendDropsTheStalledStream_doesNotHalfCloseTheCancelledCall() {
    RecordingCall call = new RecordingCall();
    List<Throwable> closeErrors = new CopyOnWriteArrayList<>();
    ForwardStream stream = closedOnStall(call, closeErrors);
    for (int i = 0; i < Batcher.MAX_IN_FLIGHT; i++) {
      stream.send(items(i));
    }
    elapse(STALL_AFTER.minusMillis(50));
    assertThat(stream.send(items(100))).isCompletedExceptionally();
    elapse(Duration.ofMillis(50));
    assertThat(stalls).as("no deadline is left to find the stall").hasValue(0);

    CompletableFuture<List<RateLimitResponse>> dropping = stream.send(items(101));

    assertThat(stalls).hasValue(1);
    assertThat(closeErrors).as("close() of a stream being dropped").isEmpty();
    assertThat(call.calls).endsWith("onError").doesNotContain("onCompleted");
    assertThatThrownBy(dropping::join)
        .as("closed while its stream was dropped: not sent on a new one")
        .hasMessageContaining("the forwarding stream was closed");
  }

  /** The server sides of the calls a {@link #notReading} peer has open, to let it read later. */
  private final List<ServerCallStreamObserver<ForwardAnswers>> unread = new CopyOnWriteArrayList<>();

  /** A peer that reads no batch until the test requests them (an owner far behind). */
  private final PeersV1Grpc.PeersV1ImplBase notReading =
      new PeersV1Grpc.PeersV1ImplBase() {
        @Override
        public StreamObserver<ForwardBatch> forwardBatches(StreamObserver<ForwardAnswers> answers) {
          ServerCallStreamObserver<ForwardAnswers> call =
              (ServerCallStreamObserver<ForwardAnswers>) answers;
          call.disableAutoRequest();
          unread.add(call);
          return holding.forwardBatches(answers);
        }
      };

  @Test
  void send_peerNotReading_expiredBatchesAreNotDeliveredLater() throws Exception {
    streamTo(notReading);
    // Stalls aside (they drop the stream, and its unread batches with it): this is about the bound.
    ForwardStream stream =
        new ForwardStream(
            this::openCall, scheduler, clock, TIMEOUT, Duration.ofHours(1), stalls::incrementAndGet);
    List<CompletableFuture<List<RateLimitResponse>>> sent = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      sent.add(stream.send(items(i)));
      scheduler.advance(TIMEOUT);
    }

    unread.forEach(call -> call.request(1000));

    assertThat(received)
        .as("batches the peer reads late, decided for nobody")
        .hasSizeLessThanOrEqualTo(Batcher.MAX_IN_FLIGHT);
    assertThat(sent).allMatch(CompletableFuture::isCompletedExceptionally);
    assertThatThrownBy(sent.get(Batcher.MAX_IN_FLIGHT)::join)
        .hasMessageContaining("DEADLINE_EXCEEDED: the peer is 8 batches behind")
        .hasMessageContaining("this batch was not sent");
    assertThat(streamsOpened).hasValue(1);
  }

  @Test
  void send_streamBehindByTheBound_refusedAtOnceUntilThePeerAnswersOneEvenLate() throws Exception {
    ForwardStream stream = streamTo(holding);
    for (int i = 0; i < Batcher.MAX_IN_FLIGHT; i++) {
      stream.send(items(i));
    }
    scheduler.advance(TIMEOUT);

    CompletableFuture<List<RateLimitResponse>> refused = stream.send(items(100));

    assertThat(refused).isCompletedExceptionally();
    assertThatThrownBy(refused::join)
        .hasMessageContaining(
            "the peer is 8 batches behind (8 batches sent on the forwarding stream are unanswered,"
                + " 8 of them past their deadline of PT0.5S), so this batch was not sent");
    assertThat(received).hasSize(Batcher.MAX_IN_FLIGHT);
    answer(0, 0); // late: its slot is free again
    CompletableFuture<List<RateLimitResponse>> next = stream.send(items(101));
    assertThat(received).hasSize(Batcher.MAX_IN_FLIGHT + 1);
    answer(0, Batcher.MAX_IN_FLIGHT);
    assertThat(remaining(next)).containsExactly(101L);
    assertThat(stalls).hasValue(0);
  }

  @Test
  void send_streamBehindByTheBound_duplicateOrUnknownAnswersFreeNoRoom() throws Exception {
    ForwardStream stream = streamTo(holding);
    for (int i = 0; i < Batcher.MAX_IN_FLIGHT; i++) {
      stream.send(items(i));
    }
    scheduler.advance(TIMEOUT);
    answer(0, 0); // late: its slot is free again
    answer(0, 0); // the same answer again: frees nothing
    answerStreams.get(0).onNext(ForwardAnswers.newBuilder().setId(1_000_000).build()); // no batch's

    CompletableFuture<List<RateLimitResponse>> fits = stream.send(items(100));
    CompletableFuture<List<RateLimitResponse>> beyond = stream.send(items(101));

    assertThat(fits).isNotDone();
    assertThat(beyond).isCompletedExceptionally();
    assertThatThrownBy(beyond::join)
        .hasMessageContaining(
            "the peer is 8 batches behind (8 batches sent on the forwarding stream are unanswered,"
                + " 7 of them past their deadline");
    assertThat(received).hasSize(Batcher.MAX_IN_FLIGHT + 1);
  }

  @Test
  void send_batchesInFlightWithinTheirDeadline_areNotBoundedByTheStream() throws Exception {
    ForwardStream stream = streamTo(holding);
    for (int i = 0; i < 2 * Batcher.MAX_IN_FLIGHT; i++) {
      assertThat(stream.send(items(i))).isNotDone();
    }

    assertThat(received).as("the batcher bounds these; a flush on close may send more").hasSize(16);
  }

  @Test
  void send_streamBehindByTheBoundForTheStallTime_isDroppedAndTheBatchGoesOutOnANewStream()
      throws Exception {
    ForwardStream stream = streamTo(holding);
    for (int i = 0; i < Batcher.MAX_IN_FLIGHT; i++) {
      stream.send(items(i));
    }
    elapse(STALL_AFTER.minusMillis(50));
    assertThat(stream.send(items(100))).isCompletedExceptionally();
    assertThat(stalls).as("no deadline is left to find the stall").hasValue(0);
    elapse(Duration.ofMillis(50));

    CompletableFuture<List<RateLimitResponse>> next = stream.send(items(101));

    assertThat(stalls).hasValue(1);
    assertThat(cancelled).as("the stalled call is cancelled").hasValue(1);
    assertThat(streamsOpened).hasValue(2);
    answer(1, Batcher.MAX_IN_FLIGHT);
    assertThat(remaining(next)).containsExactly(101L);
  }
}
