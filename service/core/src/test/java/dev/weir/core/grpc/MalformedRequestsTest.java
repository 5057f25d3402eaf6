package dev.weir.core.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerHandler;
import dev.weir.core.cluster.peer.PeersService;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.IdlePeerHandler;
import dev.weir.core.testkit.RawGrpc;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.PeersV1Grpc;
import io.grpc.ForwardingServerCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class MalformedRequestsTest {

  private static final String ANNOUNCE = PeersV1Grpc.SERVICE_NAME + "/Announce";

  private final List<String> notices = new CopyOnWriteArrayList<>();
  private Server server;
  private ManagedChannel channel;

  private final PeerHandler handler =
      new IdlePeerHandler() {

        @Override
        public CompletableFuture<Void> announce(String address, boolean leaving) {
          notices.add(address);
          return CompletableFuture.completedFuture(null);
        }
      };

  @AfterEach
  void stop() {
    if (channel != null) {
      channel.shutdownNow();
    }
    if (server != null) {
      server.shutdownNow();
    }
  }

  private void serve(ServerServiceDefinition service) throws Exception {
    String name = InProcessServerBuilder.generateName();
    server = InProcessServerBuilder.forName(name).directExecutor().addService(service).build();
    server.start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
  }

  private ServerServiceDefinition peers() {
    return new PeersService(handler, new FakeClock()).bindService();
  }

  @Test
  void unguarded_unparseableMessage_unknown() throws Exception {
    serve(peers());

    Status status = RawGrpc.unary(channel, ANNOUNCE, new byte[] {0x0a, 0x7f});

    assertThat(status.getCode()).isEqualTo(Status.Code.UNKNOWN);
  }

  @Test
  void guarded_unparseableMessages_invalidArgumentNamingTheTypeAndTheReason() throws Exception {
    serve(MalformedRequests.guard(peers()));

    assertThat(RawGrpc.unary(channel, ANNOUNCE, new byte[] {0x0a, 0x7f, 'x'}))
        .satisfies(
            s -> assertThat(s.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT),
            s ->
                assertThat(s.getDescription())
                    .isEqualTo(
                        "request is not a valid pb.gubernator.AnnounceReq: While parsing a"
                            + " protocol message, the input ended unexpectedly in the middle of a"
                            + " field"));
    assertThat(RawGrpc.unary(channel, ANNOUNCE, new byte[] {0x00}).getDescription())
        .isEqualTo(
            "request is not a valid pb.gubernator.AnnounceReq: Protocol message contained an"
                + " invalid tag (zero)");
    // Not UTF-8 ("\xC3(") is parsed as "\uFFFD(" and reaches the service, which validates it.
    assertThat(RawGrpc.unary(channel, ANNOUNCE, new byte[] {0x0a, 0x02, (byte) 0xc3, 0x28}))
        .satisfies(
            s -> assertThat(s.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT),
            s ->
                assertThat(s.getDescription())
                    .isEqualTo("field 'address' is not host:port: missing ':port'"));
    assertThat(notices).isEmpty();
  }

  @Test
  void guarded_validMessage_reachesTheHandler() throws Exception {
    serve(MalformedRequests.guard(peers()));

    PeersV1Grpc.newBlockingStub(channel)
        .announce(AnnounceReq.newBuilder().setAddress("10.0.0.2:1051").setLeaving(true).build());

    assertThat(notices).containsExactly("10.0.0.2:1051");
  }

  @Test
  void guarded_keepsTheServiceNameMethodsAndSchema() {
    ServerServiceDefinition original = peers();

    ServerServiceDefinition guarded = MalformedRequests.guard(original);

    assertThat(guarded.getServiceDescriptor().getName())
        .isEqualTo(original.getServiceDescriptor().getName());
    assertThat(guarded.getServiceDescriptor().getSchemaDescriptor())
        .isSameAs(original.getServiceDescriptor().getSchemaDescriptor());
    assertThat(guarded.getMethods())
        .extracting(m -> m.getMethodDescriptor().getFullMethodName())
        .containsExactlyInAnyOrderElementsOf(
            original.getMethods().stream()
                .map(m -> m.getMethodDescriptor().getFullMethodName())
                .toList());
  }

  @Test
  void guarded_callClosedByAnInterceptorFirst_keepsThatStatus() throws Exception {
    ServerInterceptor refuseAll =
        new ServerInterceptor() {
          @Override
          public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
              ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
            call.close(Status.UNAUTHENTICATED.withDescription("no"), new Metadata());
            return new ServerCall.Listener<>() {};
          }
        };
    serve(MalformedRequests.guard(ServerInterceptors.intercept(peers(), refuseAll)));

    Status status = RawGrpc.unary(channel, ANNOUNCE, new byte[] {0x0a, 0x7f});

    assertThat(status.getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
  }

  @Test
  void refusal_seenByAnInterceptorInsideTheGuardWhenTheCallCompletes() throws Exception {
    List<Status> refusals = new CopyOnWriteArrayList<>();
    ServerInterceptor watch =
        new ServerInterceptor() {
          @Override
          public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
              ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
            return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(
                next.startCall(call, headers)) {
              @Override
              public void onComplete() {
                refusals.add(MalformedRequests.refusal(call));
                super.onComplete();
              }
            };
          }
        };
    serve(MalformedRequests.guard(ServerInterceptors.intercept(peers(), watch)));

    RawGrpc.unary(channel, ANNOUNCE, new byte[] {0x0a, 0x7f});
    RawGrpc.unary(
        channel, ANNOUNCE, AnnounceReq.newBuilder().setAddress("a:1").build().toByteArray());

    assertThat(refusals).hasSize(2);
    assertThat(refusals.get(0).getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(refusals.get(1)).isNull();
  }

  @Test
  void describe_marshallerWithoutPrototype_namesTheMethod() {
    MethodDescriptor.Marshaller<String> text =
        new MethodDescriptor.Marshaller<>() {
          @Override
          public InputStream stream(String value) {
            return new ByteArrayInputStream(value.getBytes());
          }

          @Override
          public String parse(InputStream stream) {
            throw new IllegalArgumentException("not text. Really not.");
          }
        };
    MethodDescriptor<String, String> method =
        MethodDescriptor.newBuilder(text, text)
            .setFullMethodName("test.Text/Echo")
            .setType(MethodDescriptor.MethodType.UNARY)
            .build();

    assertThat(
            MalformedRequests.describe(method, new IllegalArgumentException("not text. Really.")))
        .isEqualTo("request is not a valid request message of test.Text/Echo: not text");
    assertThat(MalformedRequests.describe(method, new IllegalStateException()))
        .isEqualTo(
            "request is not a valid request message of test.Text/Echo: IllegalStateException");
    assertThat(MalformedRequests.describe(method, new IllegalStateException("x".repeat(500))))
        .endsWith("x".repeat(MalformedRequests.MAX_REASON_LENGTH) + "...");
  }
}
