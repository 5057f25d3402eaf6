package dev.weir.core.cluster.peer;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;

/**
 * The inbound flow control of a server stream that reads its client's messages one at a time while
 * its answers flow: the next message is asked for only while the stream takes answers without
 * queueing them ({@link ServerCallStreamObserver#isReady}), and again once it is ready, so that a
 * client that stops reading its answers stops being read from (its messages wait in HTTP/2 flow
 * control, then in its own bounded queue) rather than making this node queue answers for it without
 * bound. Costs one {@code isReady()} per message over gRPC's own one-at-a-time reading.
 *
 * <p>Its methods run on the call's callbacks, which gRPC never runs at once.
 */
final class ReadWhileReady implements Runnable {

  private final ServerCallStreamObserver<?> call;
  // Whether a message was asked for and has not come yet.
  private boolean asked;

  private ReadWhileReady(ServerCallStreamObserver<?> call) {
    this.call = call;
  }

  /**
   * Takes over the reading of the call {@code answers} answers, which must be done while the
   * call's handler method runs; an observer of no gRPC call (a test's) is left as it is.
   */
  static ReadWhileReady over(StreamObserver<?> answers) {
    if (!(answers instanceof ServerCallStreamObserver<?> call)) {
      return new ReadWhileReady(null);
    }
    ReadWhileReady reading = new ReadWhileReady(call);
    call.disableAutoRequest();
    call.setOnReadyHandler(reading);
    return reading;
  }

  /** The call became ready: asks for the next message unless one is asked for already. */
  @Override
  public void run() {
    askIfReady();
  }

  /** A message came and was handled: asks for the next one if the call is ready. */
  void received() {
    asked = false;
    askIfReady();
  }

  private void askIfReady() {
    if (call != null && !asked && call.isReady()) {
      asked = true;
      call.request(1);
    }
  }
}
