package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.engine.RateLimitEngine;
import dev.weir.core.limiter.LocalLimiter;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.FakeScheduler;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.proto.gubernator.GetPeerRateLimitsReq;
import dev.weir.proto.gubernator.GetPeerRateLimitsResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.RateLimitResp;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A member that discovery reports again under the same address but with another peer listener (it
 * restarted with a new peer port and re-registered in etcd) is called at its new listener.
 */
class ClusterNodePeerMovedTest {

  private static final String SELF = "a:1";
  private static final String PEER = "b:1";

  private final FakeClock clock = new FakeClock(1_000_000);
  private final FakeScheduler scheduler = new FakeScheduler(clock);
  private final InMemoryBucketStore store = new InMemoryBucketStore(clock);
  private final LocalLimiter local =
      new LocalLimiter(new RateLimitEngine(ZoneOffset.UTC), store, clock);
  /** Each member's peer listener as discovery reports it: an in-process server's name. */
  private final Map<String, String> listeners = new ConcurrentHashMap<>();
  private final ClusterNode node =
      new ClusterNode(
          SELF,
          ClusterForwardingTest.SETTINGS,
          store,
          local::decide,
          scheduler,
          clock,
          null,
          member -> channelTo(listeners.getOrDefault(member, member)));
  private final List<Server> servers = new java.util.ArrayList<>();

  @AfterEach
  void stop() {
    node.close();
    servers.forEach(Server::shutdownNow);
  }

  @Test
  void discovery_reportsAnotherPeerListenerForAMember_itsCallsGoThere() throws Exception {
    start("b-old", 7);
    start("b-new", 3);
    listeners.put(PEER, "b-old");
    Consumer<Set<String>> discovered = join();
    discovered.accept(Set.of(SELF, PEER));
    RateLimitRequest item = itemOwnedBy(PEER);
    assertThat(decide(item).remaining()).as("answered at the first listener").isEqualTo(7);

    listeners.put(PEER, "b-new");
    discovered.accept(Set.of(SELF, PEER));

    assertThat(decide(item).remaining()).as("answered at the new listener").isEqualTo(3);
  }

  @Test
  void discovery_reportsTheSameListenerAgain_theClientIsKept() throws Exception {
    start("b-old", 7);
    listeners.put(PEER, "b-old");
    Consumer<Set<String>> discovered = join();
    discovered.accept(Set.of(SELF, PEER));
    RateLimitRequest item = itemOwnedBy(PEER);
    decide(item);
    var client = node.peers().get(PEER);

    discovered.accept(Set.of(SELF, PEER));

    assertThat(node.peers().get(PEER)).isSameAs(client);
  }

  private RateLimitResponse decide(RateLimitRequest item) {
    var answer = node.service().decide(List.of(item));
    scheduler.advance(Duration.ofMillis(1));
    return answer.join().get(0);
  }

  private RateLimitRequest itemOwnedBy(String member) {
    for (int i = 0; ; i++) {
      RateLimitRequest r =
          RateLimitRequest.builder("n", "k" + i).hits(1).limit(10).duration(60_000).build();
      if (node.membership().ring().ownerOf(r.hashKey()).equals(member)) {
        return r;
      }
    }
  }

  /** Starts a peer listener named {@code name} answering every item with {@code remaining}. */
  private void start(String name, long remaining) throws Exception {
    servers.add(
        InProcessServerBuilder.forName(name)
            .directExecutor()
            .addService(
                new PeersV1Grpc.PeersV1ImplBase() {
                  @Override
                  public void getPeerRateLimits(
                      GetPeerRateLimitsReq request, StreamObserver<GetPeerRateLimitsResp> out) {
                    GetPeerRateLimitsResp.Builder b = GetPeerRateLimitsResp.newBuilder();
                    request
                        .getRequestsList()
                        .forEach(
                            r ->
                                b.addRateLimits(
                                    RateLimitResp.newBuilder()
                                        .setLimit(r.getLimit())
                                        .setRemaining(remaining)));
                    out.onNext(b.build());
                    out.onCompleted();
                  }
                })
            .build()
            .start());
  }

  @SuppressWarnings("unchecked")
  private Consumer<Set<String>> join() throws Exception {
    Consumer<Set<String>>[] listener = (Consumer<Set<String>>[]) new Consumer<?>[1];
    node.join(
        new PeerDiscovery() {
          @Override
          public void start(Consumer<Set<String>> l) {
            listener[0] = l;
          }

          @Override
          public Optional<String> peerAddress(String member) {
            return Optional.ofNullable(listeners.get(member));
          }

          @Override
          public void close() {}
        });
    return listener[0];
  }

  private static ManagedChannel channelTo(String name) {
    return InProcessChannelBuilder.forName(name).directExecutor().build();
  }
}
