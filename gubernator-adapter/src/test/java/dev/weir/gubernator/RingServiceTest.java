package dev.weir.gubernator;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.proto.ring.GetRingReq;
import dev.weir.proto.ring.GetRingResp;
import dev.weir.proto.ring.RingGrpc;
import dev.weir.ring.HashRing;
import dev.weir.ring.PeerHash;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class RingServiceTest {

  private Server server;
  private ManagedChannel channel;

  @AfterEach
  void stop() {
    channel.shutdownNow();
    server.shutdownNow();
  }

  private RingGrpc.RingBlockingStub serve(RingService service) throws Exception {
    String name = InProcessServerBuilder.generateName();
    server = InProcessServerBuilder.forName(name).directExecutor().addService(service).build();
    server.start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    return RingGrpc.newBlockingStub(channel);
  }

  @Test
  void getRing_answersTheRingOfEachCall_membersSortedWithHashAndPoints() throws Exception {
    AtomicReference<HashRing> ring =
        new AtomicReference<>(
            HashRing.of(List.of("10.0.0.3:1051", "10.0.0.1:1051"), 4096, PeerHash.FNV1A_FMIX64));
    RingGrpc.RingBlockingStub stub = serve(new RingService(ring::get, "10.0.0.1:1051"));

    GetRingResp first = stub.getRing(GetRingReq.getDefaultInstance());
    ring.set(ring.get().withPeers(List.of("10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.3:1051")));
    GetRingResp second = stub.getRing(GetRingReq.getDefaultInstance());

    assertThat(first.getMembersList()).containsExactly("10.0.0.1:1051", "10.0.0.3:1051");
    assertThat(first.getHash()).isEqualTo("fnv1a-fmix64");
    assertThat(first.getReplicas()).isEqualTo(4096);
    assertThat(first.getSelf()).isEqualTo("10.0.0.1:1051");
    assertThat(second.getMembersList())
        .containsExactly("10.0.0.1:1051", "10.0.0.2:1051", "10.0.0.3:1051");
  }

  @Test
  void getRing_nodeWithoutPeers_answersARingOfItself() throws Exception {
    HashRing empty = HashRing.of(List.of(), 512, PeerHash.FNV1A);
    RingGrpc.RingBlockingStub stub = serve(new RingService(() -> empty, "127.0.0.1:1051"));

    GetRingResp answer = stub.getRing(GetRingReq.getDefaultInstance());

    assertThat(answer.getMembersList()).containsExactly("127.0.0.1:1051");
    assertThat(answer.getHash()).isEqualTo("fnv1a");
    assertThat(answer.getReplicas()).isEqualTo(512);
  }
}
