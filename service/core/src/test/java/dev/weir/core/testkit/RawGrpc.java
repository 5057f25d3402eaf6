package dev.weir.core.testkit;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Sends arbitrary bytes as the request message of any gRPC method, as a client that does not speak
 * the method's protobuf type would, and returns the status the server closed the call with.
 */
public final class RawGrpc {

  /** Reads and writes a message as its bytes. */
  public static final MethodDescriptor.Marshaller<byte[]> BYTES =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
          return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
          try {
            return stream.readAllBytes();
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
      };

  private RawGrpc() {}

  /**
   * Calls {@code fullMethodName} ({@code package.Service/Method}) on {@code channel} with {@code
   * body} as its one request message and {@code headers}, as a unary call when {@code type} is
   * {@code UNARY} and as a stream of one message otherwise; waits up to 10 s for the status.
   */
  public static Status call(
      Channel channel,
      String fullMethodName,
      MethodDescriptor.MethodType type,
      byte[] body,
      Metadata headers) {
    MethodDescriptor<byte[], byte[]> method =
        MethodDescriptor.<byte[], byte[]>newBuilder(BYTES, BYTES)
            .setFullMethodName(fullMethodName)
            .setType(type)
            .build();
    ClientCall<byte[], byte[]> call =
        channel.newCall(method, CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS));
    CompletableFuture<Status> closed = new CompletableFuture<>();
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onClose(Status status, Metadata trailers) {
            closed.complete(status);
          }
        },
        headers);
    call.request(1);
    call.sendMessage(body);
    call.halfClose();
    try {
      return closed.get(15, TimeUnit.SECONDS);
    } catch (Exception e) {
      call.cancel("no status", e);
      throw new IllegalStateException("no status from " + fullMethodName, e);
    }
  }

  /** Calls the unary {@code fullMethodName} with {@code body} and no headers. */
  public static Status unary(Channel channel, String fullMethodName, byte[] body) {
    return call(channel, fullMethodName, MethodDescriptor.MethodType.UNARY, body, new Metadata());
  }
}
