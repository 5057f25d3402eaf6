package dev.weir.client;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A gate that holds the calls of the channels it {@linkplain #hold wraps} as they start (in {@code
 * newCall}, before the call exists) until the test {@linkplain #open opens} it or {@code limit}
 * passed, so that a test can act between a batch timer taking its batch and its call starting.
 */
final class CallStartGate {

  private final CountDownLatch starting = new CountDownLatch(1);
  private final CountDownLatch opened = new CountDownLatch(1);
  private final Duration limit;

  /** Creates a closed gate that holds each call at most {@code limit}. */
  CallStartGate(Duration limit) {
    this.limit = limit;
  }

  /** Returns {@code channel} whose calls wait at this gate as they start. */
  ManagedChannel hold(ManagedChannel channel) {
    return new WeirClientTest.ForwardingChannel(channel) {
      @Override
      public <Q, R> ClientCall<Q, R> newCall(MethodDescriptor<Q, R> method, CallOptions options) {
        starting.countDown();
        try {
          opened.await(limit.toSeconds(), TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return super.newCall(method, options);
      }
    };
  }

  /** Waits at most {@code limit} for a call to reach the gate; returns whether one did. */
  boolean awaitCallStarting() throws InterruptedException {
    return starting.await(limit.toSeconds(), TimeUnit.SECONDS);
  }

  /** Lets the held calls, and every later one, start. */
  void open() {
    opened.countDown();
  }
}
