package dev.weir.core.tracing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GuardedTracingTest {

  private static final List<RateLimitRequest> ITEMS =
      List.of(
          RateLimitRequest.builder("n", "a").limit(5).duration(1000).build(),
          RateLimitRequest.builder("n", "b").limit(5).duration(1000).build());

  /** A tracer whose every call throws. */
  private static final ClusterTracing THROWING =
      new ClusterTracing() {
        @Override
        public Forward forward(String owner, List<RateLimitRequest> items) {
          throw new IllegalStateException("tracer bug");
        }

        @Override
        public Span batch(String peer, List<RateLimitRequest> items) {
          throw new IllegalStateException("tracer bug");
        }

        @Override
        public Span decide(RateLimitRequest item) {
          throw new IllegalStateException("tracer bug");
        }
      };

  /** A tracer whose spans start but whose every later call throws or answers wrongly. */
  private static ClusterTracing startingThen(ClusterTracing.Forward forward) {
    return new ClusterTracing() {
      @Override
      public Forward forward(String owner, List<RateLimitRequest> items) {
        return forward;
      }

      @Override
      public Span batch(String peer, List<RateLimitRequest> items) {
        return answer -> {
          throw new IllegalStateException("tracer bug");
        };
      }

      @Override
      public Span decide(RateLimitRequest item) {
        return answer -> {
          throw new IllegalStateException("tracer bug");
        };
      }
    };
  }

  @Test
  void of_noneAndGuardedTracing_returnedAsTheyAre() {
    ClusterTracing guarded = GuardedTracing.of(THROWING);

    assertThat(GuardedTracing.of(ClusterTracing.NONE)).isSameAs(ClusterTracing.NONE);
    assertThat(GuardedTracing.of(guarded)).isSameAs(guarded);
  }

  @Test
  void spansThatCannotStart_areDroppedAndTheItemsGoAsTheyAre() {
    ClusterTracing tracing = GuardedTracing.of(THROWING);

    ClusterTracing.Forward forward = tracing.forward("owner:1", ITEMS);

    assertThat(forward).isSameAs(ClusterTracing.Forward.NONE);
    assertThat(forward.items(ITEMS)).isSameAs(ITEMS);
    assertThat(tracing.batch("owner:1", ITEMS)).isSameAs(ClusterTracing.Span.NONE);
    assertThat(tracing.decide(ITEMS.get(0))).isSameAs(ClusterTracing.Span.NONE);
  }

  @Test
  void spansThatCannotEndOrRecord_doNotThrow() {
    ClusterTracing tracing =
        GuardedTracing.of(
            startingThen(
                new ClusterTracing.Forward() {
                  @Override
                  public List<RateLimitRequest> items(List<RateLimitRequest> items) {
                    throw new IllegalStateException("tracer bug");
                  }

                  @Override
                  public void answered(RateLimitResponse answer) {
                    throw new IllegalStateException("tracer bug");
                  }
                }));
    RateLimitResponse answer = RateLimitResponse.error("x");

    ClusterTracing.Forward forward = tracing.forward("owner:1", ITEMS);

    assertThat(forward.items(ITEMS)).isSameAs(ITEMS);
    assertThatCode(() -> forward.answered(answer)).doesNotThrowAnyException();
    assertThatCode(() -> tracing.batch("owner:1", ITEMS).end(answer)).doesNotThrowAnyException();
    assertThatCode(() -> tracing.decide(ITEMS.get(0)).end(answer)).doesNotThrowAnyException();
  }

  @Test
  void forwardThatLosesOrAddsItems_itsItemsAreSentUntraced() {
    List<RateLimitRequest> traced = new ArrayList<>();
    ClusterTracing tracing =
        GuardedTracing.of(
            startingThen(
                new ClusterTracing.Forward() {
                  @Override
                  public List<RateLimitRequest> items(List<RateLimitRequest> items) {
                    return traced;
                  }

                  @Override
                  public void answered(RateLimitResponse answer) {}
                }));
    ClusterTracing.Forward forward = tracing.forward("owner:1", ITEMS);

    assertThat(forward.items(ITEMS)).as("no item").isSameAs(ITEMS);
    traced.add(ITEMS.get(0).withMetadata(Map.of("traceparent", "00-x")));
    assertThat(forward.items(ITEMS)).as("one of two").isSameAs(ITEMS);
    traced.add(ITEMS.get(1).withMetadata(Map.of("traceparent", "00-x")));
    assertThat(forward.items(ITEMS)).as("both, with context").isSameAs(traced);
  }
}
