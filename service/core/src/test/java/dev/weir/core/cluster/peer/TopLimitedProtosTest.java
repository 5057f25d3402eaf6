package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.CodedOutputStream;
import dev.weir.core.toplimited.LimitedKey;
import dev.weir.core.toplimited.TopLimitedEntry;
import dev.weir.core.toplimited.TopLimitedView;
import dev.weir.proto.gubernator.TopLimitedResp;
import java.util.List;
import org.junit.jupiter.api.Test;

class TopLimitedProtosTest {

  private static final TopLimitedView VIEW =
      new TopLimitedView(
          List.of(
              new TopLimitedEntry(
                  new LimitedKey("envoy", "shop", "per-ip", List.of("remote_address", "10.0.0.1")),
                  9,
                  12,
                  1),
              new TopLimitedEntry(LimitedKey.ofNative("login", "alice"), 3, 3, 0)),
          2,
          40);

  @Test
  void roundTrip_keepsEveryField() {
    assertThat(TopLimitedProtos.fromProto(TopLimitedProtos.toProto(VIEW))).isEqualTo(VIEW);
  }

  @Test
  void fromProto_entryWithoutAValueForEveryName_droppedAndItsCountRaisesTheFloor() {
    TopLimitedResp resp =
        TopLimitedProtos.toProto(VIEW).toBuilder()
            .addEntries(
                dev.weir.proto.gubernator.TopLimitedEntry.newBuilder()
                    .setSource("envoy")
                    .addEntries("lonely")
                    .setOverLimit(7))
            .build();

    TopLimitedView view = TopLimitedProtos.fromProto(resp);

    assertThat(view.entries()).isEqualTo(VIEW.entries());
    assertThat(view.floor()).isEqualTo(7);
  }

  @Test
  void toProto_entriesBeyondTheByteBound_leftOutAndTheFirstOfThemRaisesTheFloor() {
    int oneEntry =
        CodedOutputStream.computeMessageSize(1, TopLimitedProtos.toProto(VIEW).getEntries(0));

    TopLimitedResp resp = TopLimitedProtos.toProto(VIEW, oneEntry + 1);

    assertThat(TopLimitedProtos.fromProto(resp)).isEqualTo(VIEW.first(1));
    assertThat(TopLimitedProtos.toProto(VIEW, Integer.MAX_VALUE))
        .isEqualTo(TopLimitedProtos.toProto(VIEW));
  }

  @Test
  void first_raisesTheFloorToTheFirstEntryLeftOut() {
    TopLimitedView cut = VIEW.first(1);

    assertThat(cut.entries()).containsExactly(VIEW.entries().get(0));
    assertThat(cut.floor()).isEqualTo(3);
    assertThat(cut.total()).isEqualTo(40);
  }
}
