package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.client.WeirClient;
import dev.weir.client.WeirUnavailableException;
import dev.weir.core.Weir;
import dev.weir.core.WeirMember;
import dev.weir.core.testkit.AwaitForwarding;
import dev.weir.gubernator.RingService;
import dev.weir.gubernator.V1Service;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link WeirClient} against a three-member cluster in this JVM: each member is started through
 * {@link Weir#builder()}, as the stand-alone node is, and serves {@code pb.gubernator.V1} on its
 * server, with {@code weir.v1.Ring}, and {@code PeersV1} on its peer listener.
 */
class WeirClientClusterTest {

  private static final int MEMBERS = 3;

  private final List<WeirMember> members = new ArrayList<>();
  private final List<String> addresses = new ArrayList<>();

  @BeforeEach
  void startCluster() throws Exception {
    int[] ports = new int[MEMBERS];
    int[] peerPorts = new int[MEMBERS];
    for (int i = 0; i < MEMBERS; i++) {
      ports[i] = NodeProcess.freePort();
      peerPorts[i] = NodeProcess.freePort();
      addresses.add("127.0.0.1:" + ports[i]);
    }
    List<String> staticPeers = List.of(NodeProcess.staticPeers(ports, peerPorts).split(","));
    for (int i = 0; i < MEMBERS; i++) {
      NettyServerBuilder server =
          NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", ports[i]));
      WeirMember member =
          Weir.builder()
              .advertiseAddress(addresses.get(i))
              .staticPeers(staticPeers)
              .serverBuilder(server)
              .peerAddress("127.0.0.1:" + peerPorts[i])
              .peerSecret(NodeProcess.PEER_SECRET)
              .build();
      server.addService(new V1Service(member.service(), member::health));
      server.addService(new RingService(member.cluster().membership()::ring, addresses.get(i)));
      members.add(member.start());
    }
    AwaitForwarding.on(members);
  }

  @AfterEach
  void stop() {
    members.forEach(WeirMember::close);
  }

  private static RateLimitReq hit(String key, long limit) {
    return RateLimitReq.newBuilder()
        .setName("client_e2e")
        .setUniqueKey(key)
        .setHits(1)
        .setLimit(limit)
        .setDuration(600_000)
        .build();
  }

  @Test
  void check_concurrentChecksOfOneKeyThroughEveryMember_admitExactlyTheLimit() {
    try (WeirClient client =
        WeirClient.builder().targets(addresses).deadline(Duration.ofSeconds(30)).build()) {
      List<CompletableFuture<RateLimitResp>> checks =
          IntStream.range(0, 30).mapToObj(i -> client.check(hit("account:1", 10))).toList();
      List<RateLimitResp> responses = checks.stream().map(CompletableFuture::join).toList();

      assertThat(responses).allMatch(r -> r.getError().isEmpty());
      assertThat(responses).filteredOn(r -> r.getStatus() == Status.UNDER_LIMIT).hasSize(10);
    }
  }

  @Test
  void checkAll_manyKeys_answersInOrderFromEveryOwner() {
    try (WeirClient client =
        WeirClient.builder().target(addresses.get(0)).deadline(Duration.ofSeconds(30)).build()) {
      List<RateLimitReq> requests =
          IntStream.range(0, 300)
              .mapToObj(i -> hit(Long.toHexString(i * 0x9E3779B97F4A7C15L), 5 + i))
              .toList();

      List<RateLimitResp> responses = client.checkAll(requests).join();

      assertThat(responses)
          .extracting(RateLimitResp::getLimit)
          .containsExactlyElementsOf(requests.stream().map(RateLimitReq::getLimit).toList());
      assertThat(responses).allMatch(r -> r.getError().isEmpty());
      assertThat(responses.stream().map(r -> r.getMetadataOrDefault("owner", "self")).distinct())
          .containsExactlyInAnyOrder("self", addresses.get(1), addresses.get(2));
    }
  }

  @Test
  void sendToOwners_eachCheckIsAnsweredByItsOwner_noneForwarded_andTheLimitHolds() {
    try (WeirClient client =
        WeirClient.builder()
            .target(addresses.get(0))
            .sendToOwners()
            .deadline(Duration.ofSeconds(30))
            .build()) {
      client.refreshRing().join();
      List<RateLimitReq> requests =
          IntStream.range(0, 300)
              .mapToObj(i -> hit(Long.toHexString(i * 0x9E3779B97F4A7C15L), 5 + i))
              .toList();

      List<RateLimitResp> responses = client.checkAll(requests).join();
      List<RateLimitResp> oneKey =
          IntStream.range(0, 30)
              .mapToObj(i -> client.check(hit("account:3", 10)))
              .toList()
              .stream()
              .map(CompletableFuture::join)
              .toList();

      assertThat(client.ringMembers()).containsExactlyInAnyOrderElementsOf(addresses);
      assertThat(responses)
          .extracting(RateLimitResp::getLimit)
          .containsExactlyElementsOf(requests.stream().map(RateLimitReq::getLimit).toList());
      assertThat(responses).allMatch(r -> r.getError().isEmpty());
      assertThat(responses).noneMatch(r -> r.containsMetadata("owner"));
      assertThat(oneKey).noneMatch(r -> r.containsMetadata("owner"));
      assertThat(oneKey).filteredOn(r -> r.getStatus() == Status.UNDER_LIMIT).hasSize(10);
    }
  }

  @Test
  void check_memberStopped_failsWithWeirUnavailableException() {
    WeirMember stopped = members.get(2);
    stopped.close();
    try (WeirClient client =
        WeirClient.builder()
            .target(addresses.get(2))
            .batchWindow(Duration.ZERO)
            .deadline(Duration.ofSeconds(30))
            .build()) {
      CompletableFuture<RateLimitResp> check = client.check(hit("account:2", 10));

      assertThat(check)
          .failsWithin(Duration.ofSeconds(30))
          .withThrowableOfType(java.util.concurrent.ExecutionException.class)
          .withCauseInstanceOf(WeirUnavailableException.class);
    }
  }
}
