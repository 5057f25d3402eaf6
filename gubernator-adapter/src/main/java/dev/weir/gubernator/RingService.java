package dev.weir.gubernator;

import dev.weir.proto.ring.GetRingReq;
import dev.weir.proto.ring.GetRingResp;
import dev.weir.proto.ring.RingGrpc;
import dev.weir.ring.HashRing;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Weir's {@code weir.v1.Ring} service: the ring a node sends keys by, for clients that send each
 * item straight to the node that owns its key ({@code WeirClient.Builder#sendToOwners}).
 */
public final class RingService extends RingGrpc.RingImplBase {

  private final Supplier<HashRing> ring;
  private final String self;

  /**
   * Creates the service answering with the ring {@code ring} gives at each call; a node whose ring
   * is empty (it has no peers) answers a ring of itself, {@code self}.
   */
  public RingService(Supplier<HashRing> ring, String self) {
    this.ring = Objects.requireNonNull(ring, "ring");
    this.self = Objects.requireNonNull(self, "self");
  }

  @Override
  public void getRing(GetRingReq request, StreamObserver<GetRingResp> observer) {
    HashRing now = ring.get();
    List<String> members = now.isEmpty() ? List.of(self) : now.peers();
    observer.onNext(
        GetRingResp.newBuilder()
            .addAllMembers(members)
            .setHash(now.hash().settingName())
            .setReplicas(now.replicas())
            .setSelf(self)
            .build());
    observer.onCompleted();
  }
}
