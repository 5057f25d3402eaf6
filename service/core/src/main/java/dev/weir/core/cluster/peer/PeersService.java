package dev.weir.core.cluster.peer;

import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.AnnounceResp;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.TransferBucketsReq;
import dev.weir.proto.gubernator.TransferBucketsResp;
import dev.weir.proto.gubernator.UpdatePeerGlobalsReq;
import dev.weir.proto.gubernator.UpdatePeerGlobalsResp;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.List;

/**
 * The server side of {@code pb.gubernator.PeersV1}, delegating to a {@link PeerHandler}. An empty
 * {@code GetPeerRateLimits} is a peer's probe: answered only while the handler is {@linkplain
 * PeerHandler#serving() serving}.
 */
public final class PeersService extends PeersV1Grpc.PeersV1ImplBase {

  /** The message of the {@code UNAVAILABLE} answer to a probe of a node that is not serving. */
  public static final String NOT_SERVING =
      "this node is not serving as a cluster member (joining or leaving)";

  /** The message of the {@code OUT_OF_RANGE} error for a peer call with too many items. */
  public static final String TOO_LARGE =
      "'PeerRequest.rate_limits' list too large; max size is '" + RateLimitService.MAX_BATCH_SIZE + "'";

  private final PeerHandler handler;

  /** Creates the service over {@code handler}. */
  public PeersService(PeerHandler handler) {
    this.handler = handler;
  }

  @Override
  public void getPeerRateLimits(
      GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> observer) {
    if (request.getRequestsCount() > RateLimitService.MAX_BATCH_SIZE) {
      observer.onError(Status.OUT_OF_RANGE.withDescription(TOO_LARGE).asRuntimeException());
      return;
    }
    if (request.getRequestsCount() == 0 && !handler.serving()) {
      observer.onError(Status.UNAVAILABLE.withDescription(NOT_SERVING).asRuntimeException());
      return;
    }
    try {
      List<RateLimitRequest> items =
          request.getRequestsList().stream().map(PeerProtos::fromProto).toList();
      List<RateLimitResponse> answers = handler.checkAsOwner(items);
      GetPeerRateLimitsResp.Builder resp = GetPeerRateLimitsResp.newBuilder();
      answers.forEach(a -> resp.addRateLimits(PeerProtos.toProto(a)));
      observer.onNext(resp.build());
      observer.onCompleted();
    } catch (RuntimeException e) {
      observer.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
    }
  }

  @Override
  public void updatePeerGlobals(
      UpdatePeerGlobalsReq request, StreamObserver<UpdatePeerGlobalsResp> observer) {
    try {
      handler.applyGlobals(request.getGlobalsList());
      observer.onNext(UpdatePeerGlobalsResp.getDefaultInstance());
      observer.onCompleted();
    } catch (RuntimeException e) {
      observer.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
    }
  }

  @Override
  public void transferBuckets(
      TransferBucketsReq request, StreamObserver<TransferBucketsResp> observer) {
    try {
      int accepted = handler.acceptBuckets(request.getBucketsList(), request.getFrom());
      observer.onNext(TransferBucketsResp.newBuilder().setAccepted(accepted).build());
      observer.onCompleted();
    } catch (RuntimeException e) {
      observer.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
    }
  }

  @Override
  public void announce(AnnounceReq request, StreamObserver<AnnounceResp> observer) {
    try {
      if (request.getPrepareReturn()) {
        handler.prepareReturn(request.getAddress());
      } else {
        handler.announce(request.getAddress(), request.getLeaving());
      }
      observer.onNext(AnnounceResp.getDefaultInstance());
      observer.onCompleted();
    } catch (RuntimeException e) {
      observer.onError(Status.INTERNAL.withDescription(e.toString()).asRuntimeException());
    }
  }
}
