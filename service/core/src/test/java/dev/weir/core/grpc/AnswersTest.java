package dev.weir.core.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class AnswersTest {

  private static final IllegalStateException BOOM = new IllegalStateException("boom");

  @Test
  void completedNormallyOnlyForAFutureDoneWithAValue() {
    CompletableFuture<String> cancelled = new CompletableFuture<>();
    cancelled.cancel(false);

    assertTrue(Answers.completedNormally(CompletableFuture.completedFuture("a")));
    assertFalse(Answers.completedNormally(new CompletableFuture<>()));
    assertFalse(Answers.completedNormally(CompletableFuture.failedFuture(BOOM)));
    assertFalse(Answers.completedNormally(cancelled));
  }

  @Test
  void relaysADoneValueAtOnce() {
    Recorder observer = new Recorder();

    Answers.relay(CompletableFuture.completedFuture("a"), observer, AnswersTest::wrap);

    assertEquals(List.of("next a", "completed"), observer.events);
  }

  @Test
  void relaysADoneFailureThroughTheMapper() {
    Recorder observer = new Recorder();

    Answers.relay(CompletableFuture.<String>failedFuture(BOOM), observer, AnswersTest::wrap);

    assertEquals(List.of("error wrapped boom"), observer.events);
  }

  @Test
  void relaysAValueWhenTheFutureCompletesLater() {
    Recorder observer = new Recorder();
    CompletableFuture<String> later = new CompletableFuture<>();

    Answers.relay(later, observer, AnswersTest::wrap);
    assertEquals(List.of(), observer.events);
    later.complete("b");

    assertEquals(List.of("next b", "completed"), observer.events);
  }

  @Test
  void relaysAFailureWhenTheFutureFailsLater() {
    Recorder observer = new Recorder();
    CompletableFuture<String> later = new CompletableFuture<>();

    Answers.relay(later, observer, AnswersTest::wrap);
    assertEquals(List.of(), observer.events);
    later.completeExceptionally(BOOM);

    assertEquals(List.of("error wrapped boom"), observer.events);
  }


  private static Throwable wrap(Throwable failure) {
    return new RuntimeException("wrapped " + failure.getMessage(), failure);
  }

  /** A {@link StreamObserver} that writes down what it is told, in order. */
  private static final class Recorder implements StreamObserver<String> {
    final List<String> events = new ArrayList<>();

    @Override
    public void onNext(String value) {
      events.add("next " + value);
    }

    @Override
    public void onError(Throwable t) {
      events.add("error " + t.getMessage());
    }

    @Override
    public void onCompleted() {
      events.add("completed");
    }
  }
}
