package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PeersServiceTest {

  private final List<RateLimitRequest> seen = new ArrayList<>();
  private final List<String> notices = new ArrayList<>();
  private Server server;
  private ManagedChannel channel;
  private PeersV1Grpc.PeersV1BlockingStub stub;
  private volatile boolean serving = true;

  private final PeerHandler handler =
      new PeerHandler() {
        @Override
        public List<RateLimitResponse> checkAsOwner(List<RateLimitRequest> requests) {
          seen.addAll(requests);
          return requests.stream()
              .map(r -> RateLimitResponse.of(Status.UNDER_LIMIT, r.limit(), r.limit() - r.hits(), 42))
              .toList();
        }

        @Override
        public void applyGlobals(List<UpdatePeerGlobal> globals) {}

        @Override
        public int acceptBuckets(List<BucketSnapshot> buckets, String from) {
          return buckets.size();
        }

        @Override
        public void announce(String address, boolean leaving) {
          notices.add((leaving ? "leaving " : "back ") + address);
        }

        @Override
        public void prepareReturn(String address) {
          notices.add("prepare return " + address);
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
            .addService(new PeersService(handler))
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

  private static RateLimitReq item(int i) {
    return RateLimitReq.newBuilder().setName("n").setUniqueKey("k" + i).setHits(1).setLimit(5).build();
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
  void announce_eachKind_reachesItsHandlerMethod() {
    stub.announce(AnnounceReq.newBuilder().setAddress("a:1").setPrepareReturn(true).build());
    stub.announce(AnnounceReq.newBuilder().setAddress("a:1").build());
    stub.announce(AnnounceReq.newBuilder().setAddress("a:1").setLeaving(true).build());

    assertThat(notices).containsExactly("prepare return a:1", "back a:1", "leaving a:1");
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
  void protos_requestRoundTrip_keepsEveryField() {
    RateLimitRequest r =
        new RateLimitRequest(
            "n", "k", -3, 10, 60_000, 3, Behavior.GLOBAL | Behavior.DRAIN_OVER_LIMIT, 7, 123,
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
