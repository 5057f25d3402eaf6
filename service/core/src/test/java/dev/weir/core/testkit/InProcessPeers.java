package dev.weir.core.testkit;

import dev.weir.core.cluster.peer.PeerClient;
import dev.weir.core.cluster.peer.PeerClientSettings;
import dev.weir.core.cluster.peer.PeerHandler;
import dev.weir.core.cluster.peer.PeersService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.model.Status;
import dev.weir.core.quota.QuotaShare;
import dev.weir.core.quota.QuotaUsage;
import dev.weir.core.time.Clock;
import dev.weir.core.time.Scheduler;
import dev.weir.proto.gubernator.UpdatePeerGlobal;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * In-process {@code PeersV1} servers for tests: each answers every forwarded item UNDER_LIMIT and
 * records the forwarded batches and GLOBAL broadcasts it receives, unless a test gives a handler of
 * its own. {@link #client} starts one and returns a {@link PeerClient} of it, so a {@code
 * PeerClientPool} can be built on {@code peers::client}.
 */
public final class InProcessPeers implements AutoCloseable {

  private final PeerClientSettings settings;
  private final Clock clock;
  private final List<Server> servers = new CopyOnWriteArrayList<>();
  private final List<List<RateLimitRequest>> checked = new CopyOnWriteArrayList<>();
  private final List<List<UpdatePeerGlobal>> globals = new CopyOnWriteArrayList<>();

  /** Creates the peers; their clients use {@code settings} and {@code clock}. */
  public InProcessPeers(PeerClientSettings settings, Clock clock) {
    this.settings = settings;
    this.clock = clock;
  }

  /**
   * Starts a peer and returns a client of it that reports {@code address} as the peer's address.
   */
  public PeerClient client(String address) {
    return client(address, new RecordingHandler(), (task, delay) -> () -> {});
  }

  /**
   * Starts a peer that {@code handler} answers and returns a client of it that reports {@code
   * address} as the peer's address and runs its timers on {@code scheduler}.
   */
  public PeerClient client(String address, PeerHandler handler, Scheduler scheduler) {
    try {
      String name = InProcessServerBuilder.generateName();
      servers.add(
          InProcessServerBuilder.forName(name)
              .directExecutor()
              .addService(new PeersService(handler, clock))
              .build()
              .start());
      return new PeerClient(
          address,
          InProcessChannelBuilder.forName(name).directExecutor().build(),
          settings,
          scheduler,
          clock);
    } catch (IOException e) {
      throw new IllegalStateException("in-process peer did not start", e);
    }
  }

  /** Returns the forwarded batches received so far by every peer, a live view. */
  public List<List<RateLimitRequest>> checked() {
    return checked;
  }

  /** Returns the GLOBAL broadcasts received so far by every peer, a live view. */
  public List<List<UpdatePeerGlobal>> globals() {
    return globals;
  }

  /** Returns how many forwarded items every peer received in all. */
  public int itemsChecked() {
    return checked.stream().mapToInt(List::size).sum();
  }

  /** Stops every peer's server. */
  @Override
  public void close() {
    servers.forEach(Server::shutdownNow);
  }

  private final class RecordingHandler extends IdlePeerHandler {
    @Override
    public List<RateLimitResponse> decideAsOwner(List<RateLimitRequest> requests) {
      checked.add(requests);
      return requests.stream()
          .map(r -> RateLimitResponse.of(Status.UNDER_LIMIT, r.limit(), 0, 0))
          .toList();
    }

    @Override
    public void applyGlobals(List<UpdatePeerGlobal> received) {
      globals.add(received);
    }

    @Override
    public List<QuotaShare> reportQuota(List<QuotaUsage> usages) {
      return usages.stream().map(u -> new QuotaShare(0, 0, 0, 0, 0, "")).toList();
    }
  }
}
