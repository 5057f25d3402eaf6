package dev.weir.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.HostPort;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.discovery.StaticDiscovery;
import dev.weir.core.model.Behavior;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.AwaitForwarding;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.proto.gubernator.AnnounceReq;
import dev.weir.proto.gubernator.HealthCheckReq;
import dev.weir.proto.gubernator.HealthCheckResp;
import dev.weir.proto.gubernator.PeersV1Grpc;
import dev.weir.proto.gubernator.V1Grpc;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class WeirTest {

  private static final String SECRET = "the-members-shared-secret";

  private final List<AutoCloseable> resources = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    for (int i = resources.size() - 1; i >= 0; i--) {
      resources.get(i).close();
    }
  }

  private <T extends AutoCloseable> T closeLater(T resource) {
    resources.add(resource);
    return resource;
  }

  static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }

  private static RateLimitRequest hit(String key, long limit) {
    return RateLimitRequest.builder("requests_per_sec", key).limit(limit).duration(600_000).build();
  }

  /** Starts two members that list each other as static peers, and waits until they forward. */
  private List<WeirMember> twoMembers() throws Exception {
    return twoMembers(InputLimits.DEFAULTS);
  }

  /** Starts two members with {@code limits}, as {@link #twoMembers()} does. */
  private List<WeirMember> twoMembers(InputLimits limits) throws Exception {
    String a = "127.0.0.1:" + freePort();
    String b = "127.0.0.1:" + freePort();
    List<WeirMember> members = new ArrayList<>();
    for (String self : List.of(a, b)) {
      members.add(
          closeLater(
              Weir.builder()
                  .advertiseAddress(self)
                  .staticPeers(List.of(a, b))
                  .peerSecret(SECRET)
                  .inputLimits(limits)
                  .start()));
    }
    AwaitForwarding.on(members);
    return members;
  }

  /** Returns keys owned by {@code owner}'s ring entry, found among random keys. */
  private static List<String> keysOwnedBy(WeirMember owner, int n) {
    Random random = new Random(7);
    List<String> keys = new ArrayList<>();
    while (keys.size() < n) {
      String key = "account:" + Long.toHexString(random.nextLong());
      String hashKey = hit(key, 1).hashKey();
      if (owner.cluster().membership().ring().ownerOf(hashKey).equals(owner.cluster().self())) {
        keys.add(key);
      }
    }
    return keys;
  }

  @Test
  void start_aloneWithDefaults_decidesLocally() throws Exception {
    WeirMember member = closeLater(Weir.builder().start());

    List<Status> statuses = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      statuses.add(member.decide(hit("account:1", 2)).join().status());
    }

    assertThat(statuses).containsExactly(Status.UNDER_LIMIT, Status.UNDER_LIMIT, Status.OVER_LIMIT);
    assertThat(member.advertiseAddress().port()).isPositive();
    assertThat(member.peerPort()).as("no peers, no peer listener").isEmpty();
    assertThat(member.health().peerCount()).isEqualTo(1);
  }

  @Test
  void serving_answersPeersProbesOnlyBetweenJoinAndLeave() throws Exception {
    WeirMember member = closeLater(Weir.builder().build());
    boolean beforeStart = member.cluster().serving();

    member.start();
    boolean started = member.cluster().serving();
    member.leave();

    assertThat(beforeStart).isFalse();
    assertThat(started).isTrue();
    assertThat(member.cluster().serving()).isFalse();
  }

  @Test
  void start_withClockAndStore_decidesAtThatTimeOverThatStore() throws Exception {
    FakeClock clock = new FakeClock();
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    WeirMember member = closeLater(Weir.builder().clock(clock).store(store).start());

    RateLimitResponse response = member.decide(hit("account:1", 5)).join();

    assertThat(response.resetTime()).isEqualTo(clock.wallMillis() + 600_000);
    assertThat(store.size()).isEqualTo(1);
  }

  @Test
  void twoMembers_checksOfOneKeyOnBoth_shareOneCounter() throws Exception {
    List<WeirMember> members = twoMembers();

    List<RateLimitResponse> responses =
        IntStream.range(0, 20)
            .mapToObj(i -> members.get(i % 2).decide(hit("account:42", 7)).join())
            .toList();

    assertThat(responses).noneMatch(RateLimitResponse::isError);
    assertThat(responses).filteredOn(r -> r.status() == Status.UNDER_LIMIT).hasSize(7);
    assertThat(members.get(0).health().peerCount()).isEqualTo(2);
  }

  @Test
  void twoMembersWithTheSmallestMessageLimit_aFullBatchOfLongKeysIsStillForwarded()
      throws Exception {
    List<WeirMember> members = twoMembers(new InputLimits(65_536, 65_536, 1024, 1024, 64, 256));
    // 1000 items of about 300 bytes each: one forwarded batch of about 300 KB, and answers as large.
    List<RateLimitRequest> requests =
        keysOwnedBy(members.get(1), 1000).stream()
            .map(key -> hit(key + ":" + "k".repeat(280), 5))
            .filter(r -> members.get(1).cluster().membership().ring().ownerOf(r.hashKey())
                .equals(members.get(1).cluster().self()))
            .toList();
    assertThat(requests).hasSizeGreaterThan(100);

    List<RateLimitResponse> answers = members.get(0).decideAll(requests).join();

    assertThat(answers).allSatisfy(r -> assertThat(r.error()).isEmpty());
    assertThat(answers).allMatch(r -> r.remaining() == 4);
  }

  @Test
  void checkAll_moreThanOneCallCarries_answersEveryItemInOrder() throws Exception {
    WeirMember member = closeLater(Weir.builder().start());
    List<RateLimitRequest> requests =
        IntStream.range(0, 2500).mapToObj(i -> hit("account:" + i, 1 + i % 3)).toList();

    List<RateLimitResponse> responses = member.decideAll(requests).join();

    assertThat(responses).hasSize(2500);
    assertThat(responses)
        .extracting(RateLimitResponse::limit)
        .containsExactlyElementsOf(requests.stream().map(RateLimitRequest::limit).toList());
    assertThat(responses).allMatch(r -> r.status() == Status.UNDER_LIMIT);
  }

  @Test
  void check_badItem_answersItsErrorWithoutFailing() throws Exception {
    WeirMember member = closeLater(Weir.builder().start());

    RateLimitResponse response =
        member
            .decide(RateLimitRequest.builder("", "account:1").limit(1).duration(1000).build())
            .join();

    assertThat(response.isError()).isTrue();
    assertThat(response.error()).contains("name");
  }

  @Test
  void close_owner_handsItsBucketsToTheOtherMember() throws Exception {
    List<WeirMember> members = twoMembers();
    WeirMember owner = members.get(0);
    WeirMember other = members.get(1);
    List<String> keys = keysOwnedBy(owner, 5);
    for (String key : keys) {
      owner.decide(hit(key, 10).withHits(3)).join();
    }

    owner.close();

    assertThat(owner.cluster().handOff().sentCount()).isGreaterThanOrEqualTo(keys.size());
    for (String key : keys) {
      assertThat(other.decide(hit(key, 10).withHits(0)).join().remaining()).isEqualTo(7);
    }
    assertThat(other.health().peers()).containsExactly(other.advertiseAddress().toString());
  }

  @Test
  void stopServer_thenGlobalCheck_answersUntilClose() throws Exception {
    WeirMember member = twoMembers().get(0);
    int port = member.grpcPort();

    member.stopServer(Duration.ofSeconds(5));
    RateLimitResponse afterStop =
        member
            .decide(
                RateLimitRequest.builder("requests_per_sec", "account:1")
                    .limit(5)
                    .duration(600_000)
                    .behavior(Behavior.GLOBAL)
                    .build())
            .join();
    member.stopServer(Duration.ofSeconds(5));
    member.close();

    assertThat(afterStop.error()).isEmpty();
    assertThat(afterStop.status()).isEqualTo(Status.UNDER_LIMIT);
    assertThatThrownBy(() -> new Socket(InetAddress.getLoopbackAddress(), port).close())
        .isInstanceOf(IOException.class);
    assertThatThrownBy(() -> member.decide(hit("account:1", 1)).join())
        .hasCauseInstanceOf(IllegalStateException.class);
  }

  @Test
  void close_thenCheck_failsAndCloseAgainDoesNothing() throws Exception {
    WeirMember member = Weir.builder().start();
    member.close();
    member.close();

    assertThatThrownBy(() -> member.decide(hit("account:1", 1)).join())
        .isInstanceOf(CompletionException.class)
        .cause()
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("the member is closed; it decides nothing after close()");
  }

  @Test
  void leave_thenCheck_isForwardedToTheNextOwnerAsTheServiceIs() throws Exception {
    List<WeirMember> members = twoMembers();
    WeirMember leaver = members.get(0);
    WeirMember other = members.get(1);
    List<String> keys = keysOwnedBy(leaver, 3);

    leaver.leave();
    List<RateLimitResponse> afterLeave =
        keys.stream().map(key -> leaver.decide(hit(key, 10).withHits(2)).join()).toList();

    assertThat(afterLeave).allSatisfy(r -> assertThat(r.error()).isEmpty());
    for (String key : keys) {
      assertThat(other.decide(hit(key, 10).withHits(0)).join().remaining())
          .as("%s counted once, at the next owner", key)
          .isEqualTo(8);
    }
  }

  @Test
  void stopServer_beforeStart_doesNothing_soTheStartedMemberServesItsPeers() throws Exception {
    String a = "127.0.0.1:" + freePort();
    String b = "127.0.0.1:" + freePort();
    WeirMember first =
        closeLater(
            Weir.builder()
                .advertiseAddress(a)
                .staticPeers(List.of(a, b))
                .peerSecret(SECRET)
                .build());

    first.stopServer(Duration.ZERO);
    first.start();
    WeirMember second =
        closeLater(
            Weir.builder()
                .advertiseAddress(b)
                .staticPeers(List.of(a, b))
                .peerSecret(SECRET)
                .start());

    new Socket(InetAddress.getLoopbackAddress(), first.peerPort().orElseThrow()).close();
    AwaitForwarding.on(List.of(first, second));
    for (String key : keysOwnedBy(first, 3)) {
      assertThat(second.decide(hit(key, 10)).join().error()).as("forwarded to the first").isEmpty();
    }
  }

  @Test
  void stopServer_beforeStart_leavesTheCallersServerRunning() throws Exception {
    Server callers =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).build().start();
    closeLater(callers::shutdownNow);
    WeirMember member = closeLater(Weir.builder().server(callers).build());

    member.stopServer(Duration.ZERO);

    assertThat(callers.isShutdown()).isFalse();
  }

  @Test
  void close_beforeStart_releasesThePeerListener() throws Exception {
    String a = "127.0.0.1:" + freePort();
    WeirMember member =
        Weir.builder()
            .advertiseAddress(a)
            .staticPeers(List.of(a, "127.0.0.1:" + freePort()))
            .peerSecret(SECRET)
            .build();
    int peerPort = member.peerPort().orElseThrow();

    member.close();

    assertThatThrownBy(() -> new Socket(InetAddress.getLoopbackAddress(), peerPort).close())
        .isInstanceOf(IOException.class);
  }

  @Test
  void check_beforeStart_failsNamingStart() {
    WeirMember member = Weir.builder().build();
    closeLater(member);

    assertThatThrownBy(() -> member.decide(hit("account:1", 1)).join())
        .hasCauseInstanceOf(IllegalStateException.class)
        .hasMessageContaining("call start() before checking");
  }

  @Test
  void serverBuilder_given_servesCallersServicesThereAndPeersV1OnThePeerListener()
      throws Exception {
    int port = freePort();
    int peerPort = freePort();
    String a = "127.0.0.1:" + port;
    String b = "127.0.0.1:" + freePort();
    List<String> peers = List.of(a + "@" + peerPort, b + "@" + b.substring(b.lastIndexOf(':') + 1));
    WeirMember onCallersServer =
        closeLater(
            Weir.builder()
                .advertiseAddress(a)
                .staticPeers(peers)
                .serverBuilder(
                    NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
                        .addService(new CallersService()))
                .peerAddress("127.0.0.1:" + peerPort)
                .peerSecret(SECRET)
                .start());
    WeirMember other =
        closeLater(
            Weir.builder().advertiseAddress(b).staticPeers(peers).peerSecret(SECRET).start());
    AwaitForwarding.on(List.of(onCallersServer, other));
    ManagedChannel channel =
        closeLater(new ClosingChannel(ManagedChannelBuilder.forTarget(a).usePlaintext().build()))
            .channel();

    HealthCheckResp callers =
        V1Grpc.newBlockingStub(channel).healthCheck(HealthCheckReq.getDefaultInstance());
    List<RateLimitResponse> responses =
        IntStream.range(0, 10)
            .mapToObj(i -> (i % 2 == 0 ? onCallersServer : other).decide(hit("account:7", 4)).join())
            .toList();

    assertThat(onCallersServer.grpcPort()).isEqualTo(port);
    assertThat(onCallersServer.peerPort()).hasValue(peerPort);
    assertThat(callers.getMessage()).isEqualTo("the caller's own service");
    assertThat(responses).noneMatch(RateLimitResponse::isError);
    assertThat(responses).filteredOn(r -> r.status() == Status.UNDER_LIMIT).hasSize(4);
    assertThatThrownBy(
            () ->
                PeersV1Grpc.newBlockingStub(channel)
                    .announce(AnnounceReq.newBuilder().setAddress(b).setLeaving(true).build()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Code.UNIMPLEMENTED));
  }

  @Test
  void build_peerPortInUse_failsAtBuildNotAtStart() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      int port = freePort();
      int peerPort = taken.getLocalPort();
      String a = "127.0.0.1:" + port;
      List<String> peers = List.of(a + "@" + peerPort, "127.0.0.1:" + freePort() + "@1");
      Weir.Builder builder =
          Weir.builder()
              .advertiseAddress(a)
              .staticPeers(peers)
              .serverBuilder(
                  NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port)))
              .peerAddress("127.0.0.1:" + peerPort)
              .peerSecret(SECRET);

      assertThatThrownBy(builder::build)
          .isInstanceOf(java.io.UncheckedIOException.class)
          .hasMessageContaining("cannot start the peer listener at /127.0.0.1:" + peerPort)
          .hasMessageContaining("Failed to bind");
    }
  }

  @Test
  void build_peersWithoutSecretOrTls_failsNamingTheSettings() {
    assertThatThrownBy(
            () ->
                Weir.builder()
                    .advertiseAddress("127.0.0.1:1051")
                    .staticPeers(List.of("127.0.0.1:1051", "127.0.0.1:2051"))
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("set peerSecret or peerTls")
        .hasMessageContaining("insecurePeers(true)");
  }

  @Test
  void build_peersInsecureByChoice_forwardsWithoutCredentials() throws Exception {
    String a = "127.0.0.1:" + freePort();
    String b = "127.0.0.1:" + freePort();
    List<WeirMember> members = new ArrayList<>();
    for (String self : List.of(a, b)) {
      members.add(
          closeLater(
              Weir.builder()
                  .advertiseAddress(self)
                  .staticPeers(List.of(a, b))
                  .insecurePeers(true)
                  .start()));
    }
    AwaitForwarding.on(members);

    List<RateLimitResponse> responses =
        IntStream.range(0, 6)
            .mapToObj(i -> members.get(i % 2).decide(hit("account:9", 3)).join())
            .toList();

    assertThat(responses).filteredOn(r -> r.status() == Status.UNDER_LIMIT).hasSize(3);
  }

  @Test
  void build_serverBuilderWithPeersButNoPeerAddress_failsNamingIt() {
    assertThatThrownBy(
            () ->
                Weir.builder()
                    .advertiseAddress("127.0.0.1:1051")
                    .staticPeers(List.of("127.0.0.1:1051", "127.0.0.1:2051"))
                    .serverBuilder(NettyServerBuilder.forPort(1051))
                    .peerSecret(SECRET)
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("set peerAddress");
  }

  @Test
  void build_staticEntryOfSelfDisagreesWithPeerAddress_failsNamingBoth() {
    assertThatThrownBy(
            () ->
                Weir.builder()
                    .advertiseAddress("127.0.0.1:1051")
                    .staticPeers(List.of("127.0.0.1:1051@1099", "127.0.0.1:2051@2052"))
                    .serverBuilder(NettyServerBuilder.forPort(1051))
                    .peerAddress("127.0.0.1:1052")
                    .peerSecret(SECRET)
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("127.0.0.1:1099")
        .hasMessageContaining("127.0.0.1:1052");
  }

  @Test
  void serverBuilder_withAdvertisePortZero_failsNamingTheField() {
    assertThatThrownBy(
            () ->
                Weir.builder()
                    .serverBuilder(NettyServerBuilder.forPort(0))
                    .advertiseAddress("127.0.0.1:0")
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("advertiseAddress must name the port");
  }

  @Test
  void build_staticPeersAndDiscovery_failsNamingBoth() {
    assertThatThrownBy(
            () ->
                Weir.builder()
                    .staticPeers(List.of("127.0.0.1:1051"))
                    .discovery(new StaticDiscovery("127.0.0.1:1051", List.of()))
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("staticPeers or discovery, not both");
  }

  @Test
  void builder_badValues_failNamingFieldAndValue() {
    assertThatThrownBy(() -> Weir.builder().advertiseAddress("no-port"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("advertiseAddress must be host:port, got \"no-port\"");
    assertThatThrownBy(() -> Weir.builder().cacheSize(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("cacheSize must be at least 1, got 0");
    assertThatThrownBy(() -> Weir.builder().peerTlsServerName("weir-peers:1052"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("peerTlsServerName: 'weir-peers:1052' is not a DNS name");
    assertThatThrownBy(() -> Weir.builder().peerTlsServerName("weir_peers.test"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "peerTlsServerName: 'weir_peers.test' is not a DNS name; give "
                + HostPort.TLS_NAMES
                + ", at most 253 characters, without a port or scheme");
  }

  @Test
  void builder_peerTlsServerNameWhoseLastPartStartsWithADigit_isKept() {
    assertThat(Weir.builder().peerTlsServerName("weir-peers.1team")).isNotNull();
    assertThat(Weir.builder().peerTlsServerName("weir-peers.1team.")).isNotNull();
  }

  @Test
  void leaveWait_overTheLimitOrNull_isRefusedNamingTheSetting() {
    assertThatThrownBy(() -> Weir.builder().leaveWait(ChronoUnit.FOREVER.getDuration()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "leaveWait must be zero or more and at most PT1H, got "
                + ChronoUnit.FOREVER.getDuration());
    assertThatThrownBy(() -> Weir.builder().leaveWait(Duration.ofMillis(Long.MAX_VALUE)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("leaveWait must be zero or more and at most PT1H, got PT");
    assertThatThrownBy(() -> Weir.builder().leaveWait(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("leaveWait must be zero or more and at most PT1H, got PT-1S");
    assertThatThrownBy(() -> Weir.builder().leaveWait(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("leaveWait");
    assertThat(Weir.builder().leaveWait(Weir.MAX_LEAVE_WAIT)).isNotNull();
  }

  @Test
  void close_withAGraceTooLongForNanoseconds_waitsAndStopsTheGivenServer() throws Exception {
    Server callers =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).build().start();
    closeLater(callers::shutdownNow);
    WeirMember member = Weir.builder().server(callers).start();

    member.close(Duration.ofMillis(Long.MAX_VALUE));

    assertThat(callers.isTerminated()).isTrue();
    assertThatThrownBy(() -> member.decide(hit("account:1", 1)).join())
        .hasCauseInstanceOf(IllegalStateException.class);
  }

  @Test
  void close_whenStoppingTheServerThrows_stillClosesTheDiscoveryAndRethrows() throws Exception {
    Server callers =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).build().start();
    closeLater(callers::shutdownNow);
    Server failing = new FailingShutdownServer(callers);
    RecordingDiscovery discovery = new RecordingDiscovery();
    WeirMember member = Weir.builder().server(failing).discovery(discovery).start();

    assertThatThrownBy(() -> member.close(Duration.ZERO))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("shutdown failed");

    assertThat(discovery.closed).as("discovery closed").isTrue();
  }

  /** A discovery that reports whatever member it is given alone and records its close. */
  private static final class RecordingDiscovery implements PeerDiscovery {
    volatile boolean closed;

    @Override
    public void start(Consumer<Set<String>> listener) {}

    @Override
    public boolean onlySelf() {
      return true;
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  /** A started server whose {@code shutdown()} throws; the rest is the wrapped server's. */
  private static final class FailingShutdownServer extends Server {
    private final Server inner;

    FailingShutdownServer(Server inner) {
      this.inner = inner;
    }

    @Override
    public Server start() {
      return this;
    }

    @Override
    public int getPort() {
      return inner.getPort();
    }

    @Override
    public Server shutdown() {
      throw new IllegalStateException("shutdown failed");
    }

    @Override
    public Server shutdownNow() {
      inner.shutdownNow();
      return this;
    }

    @Override
    public boolean isShutdown() {
      return inner.isShutdown();
    }

    @Override
    public boolean isTerminated() {
      return inner.isTerminated();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
      return inner.awaitTermination(timeout, unit);
    }

    @Override
    public void awaitTermination() throws InterruptedException {
      inner.awaitTermination();
    }
  }

  @Test
  void build_peerTlsServerNameWithoutPeerTls_fails() {
    assertThatThrownBy(() -> Weir.builder().peerTlsServerName("weir-peers.test").build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("peerTlsServerName needs peerTls");
  }

  /** A service of the caller's, served next to Weir's on one port. */
  private static final class CallersService extends V1Grpc.V1ImplBase {
    @Override
    public void healthCheck(HealthCheckReq request, StreamObserver<HealthCheckResp> out) {
      out.onNext(HealthCheckResp.newBuilder().setMessage("the caller's own service").build());
      out.onCompleted();
    }
  }

  /** Shuts a channel down when the test ends. */
  private record ClosingChannel(ManagedChannel channel) implements AutoCloseable {
    @Override
    public void close() {
      channel.shutdownNow();
    }
  }
}
