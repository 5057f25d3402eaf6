package dev.weir.discovery.etcd;

import dev.weir.core.concurrent.Completions;
import dev.weir.core.config.HostPort;
import dev.weir.core.discovery.PeerAddress;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.netty.handler.ssl.util.InsecureTrustManagerFactory;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * Membership through etcd: this node registers {@code <prefix><advertise address>} under a lease it
 * keeps alive, and the peer set is every key under the prefix registered with this node's data center
 * ({@link EtcdSettings#dataCenter()}; registrations of other data centers stay off the ring, as in
 * Gubernator).
 *
 * <p>Design: one session = grant a lease, put our key, read the prefix, watch from the next revision,
 * and refresh the lease every third of its TTL with a single keep-alive call. Any failure (a call times
 * out, the watch ends, the lease is gone) ends the session: the last known peers stay in place,
 * {@link #problem()} explains, and a new session (with a new lease) starts after a capped exponential
 * backoff. All state lives on one private thread; etcd callbacks hop onto it and carry the session
 * number so stale callbacks are ignored. Each ended session (or failed attempt to start one) counts
 * one {@code etcd} discovery error, however many of its callbacks report the failure.
 */
public final class EtcdDiscovery implements PeerDiscovery {
  private static final Logger log = LoggerFactory.getLogger(EtcdDiscovery.class);
  private static final long MIN_BACKOFF_MS = 200;
  private static final long MAX_BACKOFF_MS = 5_000;
  /**
   * The rate-limited logger's key of the warnings about values under the prefix that are no
   * registration, apart from the session failures' {@value #MECHANISM}.
   */
  private static final String UNREADABLE_WARNINGS = "etcd unreadable registration";

  /** How many characters of an unreadable registration's value a warning shows. */
  private static final int VALUE_SHOWN = 80;

  /** Gubernator's default key prefix, which has no trailing {@code /}. */
  static final String GUBERNATOR_KEY_PREFIX = "/gubernator-peers";

  /**
   * The mechanism's name as {@code WEIR_PEER_DISCOVERY_TYPE} spells it, also the {@code mechanism}
   * label of the discovery error counter.
   */
  public static final String MECHANISM = "etcd";

  private final Client client;
  private final EtcdSettings settings;
  private final String self;
  private final ByteSequence prefix;
  private final ByteSequence key;
  private final ByteSequence value;
  private final ScheduledExecutorService executor;
  private final Duration timeout;
  private final WeirMetrics metrics;
  private final RateLimitedLogger warnings;

  private final Map<String, PeerInfo> registered = new HashMap<>();
  /**
   * The keys under the prefix whose value was named in a WARN, with it: no registration, or one
   * whose {@code peer_address} was read as absent.
   */
  private final Map<String, String> unreadable = new HashMap<>();
  private volatile Map<String, String> peerAddresses = Map.of();
  private Consumer<Set<String>> listener = peers -> {};
  private Set<String> delivered = Set.of();
  private int ignoredOtherDataCenter;
  private long session;
  private long leaseId;
  private Watch.Watcher watcher;
  private ScheduledFuture<?> keepAliveTask;
  private CompletableFuture<LeaseKeepAliveResponse> keepAliveCall;
  private long backoffMs = MIN_BACKOFF_MS;
  private boolean closed;
  private volatile String problem = "";

  /**
   * Creates discovery that registers {@code selfAddress} and talks to etcd through {@code client}, which
   * it owns and closes.
   */
  public EtcdDiscovery(Client client, EtcdSettings settings, String selfAddress) {
    this(client, settings, selfAddress, WeirMetrics.NOOP);
  }

  /** Creates discovery as above that counts each failure in {@code metrics}. */
  public EtcdDiscovery(Client client, EtcdSettings settings, String selfAddress, WeirMetrics metrics) {
    this(client, settings, selfAddress, 0, metrics);
  }

  /**
   * Creates discovery as above that also registers this node's peer listener, at {@code peerPort}
   * (0: none) of the registered address's host, and reports the peer listeners the others
   * registered.
   */
  public EtcdDiscovery(
      Client client, EtcdSettings settings, String selfAddress, int peerPort, WeirMetrics metrics) {
    this(client, settings, selfAddress, peerPort, metrics, SystemClock.INSTANCE);
  }

  /**
   * Creates discovery as above whose rate-limited warnings count their window on {@code clock}.
   */
  EtcdDiscovery(
      Client client,
      EtcdSettings settings,
      String selfAddress,
      int peerPort,
      WeirMetrics metrics,
      Clock clock) {
    this.warnings = new RateLimitedLogger(log, clock, RateLimitedLogger.DEFAULT_INTERVAL);
    this.metrics = metrics;
    this.client = client;
    this.settings = settings;
    this.self = settings.advertiseAddress().orElse(selfAddress);
    this.prefix = bytes(settings.keyPrefix());
    this.key = bytes(settings.keyPrefix() + self);
    String selfPeer = peerPort == 0 ? "" : PeerAddress.of(HostPort.parse(self).host(), peerPort);
    this.value = bytes(new PeerInfo(self, settings.dataCenter(), selfPeer).toJson());
    this.timeout = settings.dialTimeout();
    this.executor =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "weir-etcd-discovery");
              t.setDaemon(true);
              return t;
            });
  }

  /** Creates discovery with a client built from {@code settings} (endpoints, credentials, TLS). */
  public static EtcdDiscovery create(EtcdSettings settings, String selfAddress) throws SSLException {
    return create(settings, selfAddress, WeirMetrics.NOOP);
  }

  /** Creates discovery as above that counts each failure in {@code metrics}. */
  public static EtcdDiscovery create(EtcdSettings settings, String selfAddress, WeirMetrics metrics)
      throws SSLException {
    return create(settings, selfAddress, 0, metrics);
  }

  /**
   * Creates discovery as above that registers this node's peer listener at {@code peerPort} (0:
   * none) of its host.
   */
  public static EtcdDiscovery create(
      EtcdSettings settings, String selfAddress, int peerPort, WeirMetrics metrics)
      throws SSLException {
    return new EtcdDiscovery(buildClient(settings), settings, selfAddress, peerPort, metrics);
  }

  @Override
  public Optional<String> peerAddress(String member) {
    return Optional.ofNullable(peerAddresses.get(member));
  }

  /** Returns a jetcd client configured from {@code settings}. */
  static Client buildClient(EtcdSettings settings) throws SSLException {
    long dialMs = settings.dialTimeout().toMillis();
    long retryDelayMs = Math.max(10, Math.min(500, dialMs / 5));
    ClientBuilder builder =
        Client.builder()
            .endpoints(settings.endpoints().stream().map(URI::create).toList())
            .connectTimeout(settings.dialTimeout())
            .waitForReady(false)
            .retryDelay(retryDelayMs)
            .retryMaxDelay(Math.max(retryDelayMs, Math.min(2_500, dialMs)))
            .retryMaxDuration(Duration.ofMillis(Math.max(dialMs, retryDelayMs + 1)));
    if (!settings.user().isEmpty()) {
      builder.user(bytes(settings.user())).password(bytes(settings.password()));
    }
    if (settings.tls().isPresent()) {
      EtcdSettings.Tls tls = settings.tls().get();
      builder.sslContext(
          ssl -> {
            if (tls.skipVerify()) {
              ssl.trustManager(InsecureTrustManagerFactory.INSTANCE);
            } else {
              tls.caFile().ifPresent(ca -> ssl.trustManager(ca.toFile()));
            }
            if (tls.certFile().isPresent() && tls.keyFile().isPresent()) {
              ssl.keyManager(tls.certFile().get().toFile(), tls.keyFile().get().toFile());
            }
          });
    }
    return builder.build();
  }

  /** Returns the address this node registers. */
  public String selfAddress() {
    return self;
  }

  /**
   * Registers this node and starts watching; returns after the first attempt, having delivered either
   * etcd's peer set or, if etcd could not be reached, this node alone (retrying in the background).
   */
  @Override
  public void start(Consumer<Set<String>> listener) throws Exception {
    String prefixWarning = prefixWarning(settings.keyPrefixVariable(), settings.keyPrefix());
    if (prefixWarning != null) {
      log.atLevel(prefixLevel(settings.keyPrefix())).log("{}", prefixWarning);
    }
    onExecutor(
        () -> {
          this.listener = listener;
          connect();
        });
  }

  /** Returns the data center this node registers in; only its registrations join the ring. */
  @Override
  public String dataCenter() {
    return settings.dataCenter();
  }

  @Override
  public String problem() {
    return problem;
  }

  /**
   * Stops watching, revokes the lease (so peers drop this node at once) and closes the client;
   * waits up to the dial timeout for etcd to answer the revoke, after which the lease expires.
   */
  @Override
  public void close() throws Exception {
    stop(true);
  }

  /** Stops without revoking the lease, as a crashed process would; the key expires with the lease. */
  void halt() throws Exception {
    stop(false);
  }

  private void stop(boolean leave) throws Exception {
    if (executor.isShutdown()) {
      return;
    }
    try {
      onExecutor(
          () -> {
            if (closed) {
              return;
            }
            closed = true;
            endSession();
            if (leave && leaseId != 0) {
              try {
                client
                    .getLeaseClient()
                    .revoke(leaseId)
                    .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
              } catch (ExecutionException | TimeoutException e) {
                log.warn(
                    "could not revoke etcd lease {} on shutdown: {}",
                    Long.toHexString(leaseId),
                    describe(e));
              }
            }
            client.close();
          });
    } finally {
      executor.shutdownNow();
    }
  }

  private void connect() throws InterruptedException {
    if (closed) {
      return;
    }
    long id = ++session;
    try {
      long lease = await(client.getLeaseClient().grant(settings.leaseTtl().toSeconds())).getID();
      try {
        await(client.getKVClient().put(key, value, PutOption.builder().withLeaseId(lease).build()));
      } catch (ExecutionException | TimeoutException | RuntimeException e) {
        // The key may still be under the last lease: keep that one for close() to revoke.
        client.getLeaseClient().revoke(lease);
        throw e;
      }
      // The key is under this lease now, even if a later step fails: close() revokes it.
      leaseId = lease;
      GetResponse snapshot =
          await(client.getKVClient().get(prefix, GetOption.builder().isPrefix(true).build()));
      registered.clear();
      Set<String> keys = new HashSet<>();
      for (KeyValue kv : snapshot.getKvs()) {
        keys.add(kv.getKey().toString(StandardCharsets.UTF_8));
        put(kv);
      }
      unreadable.keySet().retainAll(keys);
      deliver();
      watcher =
          client
              .getWatchClient()
              .watch(
                  prefix,
                  WatchOption.builder()
                      .isPrefix(true)
                      .withRevision(snapshot.getHeader().getRevision() + 1)
                      .build(),
                  Watch.listener(
                      response -> executor.execute(() -> onWatch(id, response)),
                      error -> executor.execute(() -> fail(id, "watch failed: " + describe(error))),
                      () -> executor.execute(() -> fail(id, "watch ended"))));
      long every = Math.max(100, settings.leaseTtl().toMillis() / 3);
      keepAliveTask = executor.scheduleWithFixedDelay(() -> keepAlive(id), every, every, TimeUnit.MILLISECONDS);
      backoffMs = MIN_BACKOFF_MS;
      if (!problem.isEmpty()) {
        log.info(
            "etcd at {} reachable again; registered {} with a new lease",
            settings.endpoints(),
            self);
      }
      problem = "";
    } catch (ExecutionException | TimeoutException | RuntimeException e) {
      fail(id, describe(e));
      deliver();
    }
  }

  // Sends one keep-alive unless the last is unanswered; its answer is handled on the executor, so
  // that watch events and close() never wait on etcd meanwhile.
  private void keepAlive(long id) {
    if (id != session || closed || keepAliveCall != null) {
      return;
    }
    CompletableFuture<LeaseKeepAliveResponse> call;
    try {
      call = client.getLeaseClient().keepAliveOnce(leaseId);
    } catch (RuntimeException e) {
      fail(id, "lease keep-alive failed: " + describe(e));
      return;
    }
    keepAliveCall = call;
    call.orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS)
        .whenComplete(
            (response, error) -> {
              try {
                executor.execute(() -> keptAlive(id, call, response, error));
              } catch (RejectedExecutionException closing) {
                // closed meanwhile: nothing to keep alive
              }
            });
  }

  private void keptAlive(
      long id, CompletableFuture<?> call, LeaseKeepAliveResponse response, Throwable error) {
    if (keepAliveCall == call) {
      keepAliveCall = null;
    }
    if (error != null) {
      fail(id, "lease keep-alive failed: " + describe(Completions.cause(error)));
    } else if (response.getTTL() <= 0) {
      fail(id, "lease " + Long.toHexString(leaseId) + " expired");
    }
  }

  private void onWatch(long id, WatchResponse response) {
    if (id != session || closed) {
      return;
    }
    for (WatchEvent event : response.getEvents()) {
      switch (event.getEventType()) {
        case PUT -> put(event.getKeyValue());
        case DELETE -> {
          ByteSequence deleted = event.getKeyValue().getKey();
          registered.remove(deleted.toString(StandardCharsets.UTF_8));
          unreadable.remove(deleted.toString(StandardCharsets.UTF_8));
          if (deleted.equals(key)) {
            registerAgain(id);
          }
        }
        default -> {}
      }
    }
    deliver();
  }

  /**
   * Puts this node's key back under its lease: something deleted it while the lease lives (an
   * operator, or another process registered under the same address that then left), and the
   * other nodes would drop this one for good.
   */
  private void registerAgain(long id) {
    log.warn(
        "this node's etcd key {} was deleted while its lease {} is alive; registering it again",
        key.toString(StandardCharsets.UTF_8),
        Long.toHexString(leaseId));
    client
        .getKVClient()
        .put(key, value, PutOption.builder().withLeaseId(leaseId).build())
        .whenComplete(
            (done, error) -> {
              if (error != null) {
                executor.execute(() -> fail(id, "registering again failed: " + describe(error)));
              }
            });
  }

  private void fail(long id, String reason) {
    if (id != session || closed) {
      return;
    }
    endSession();
    session++;
    problem =
        "etcd discovery degraded (" + settings.endpoints() + "): " + reason + "; keeping the last "
            + delivered.size() + " known peers";
    metrics.discoveryError(MECHANISM);
    warnings.warn("etcd", "{}", problem);
    long delay = backoffMs;
    backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
    executor.schedule(this::reconnect, delay, TimeUnit.MILLISECONDS);
  }

  private void reconnect() {
    try {
      connect();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void endSession() {
    if (keepAliveTask != null) {
      keepAliveTask.cancel(false);
      keepAliveTask = null;
    }
    if (keepAliveCall != null) {
      keepAliveCall.cancel(true);
      keepAliveCall = null;
    }
    if (watcher != null) {
      watcher.close();
      watcher = null;
    }
  }

  /**
   * Takes the registration {@code kv} in, or leaves off the ring a key whose value is no
   * registration ({@link PeerInfo#read}) or that is taken for another cluster's ({@link
   * #otherPrefix}), warning once for each value it holds and, over all keys, at most
   * once per {@link RateLimitedLogger#DEFAULT_INTERVAL}; a value whose line that limit suppressed
   * is warned about when the key is next read with it (a put, or a session's full read).
   */
  private void put(KeyValue kv) {
    String k = kv.getKey().toString(StandardCharsets.UTF_8);
    String v = kv.getValue().toString(StandardCharsets.UTF_8);
    String why;
    PeerInfo info = null;
    List<String> problems = new ArrayList<>(1);
    try {
      info = PeerInfo.read(v, problems::add);
      why = otherPrefix(settings.keyPrefix(), k, info.grpcAddress());
    } catch (IllegalArgumentException e) {
      why =
          "its value '"
              + shown(v)
              + "' is not a peer registration: "
              + e.getMessage()
              + "; expected Gubernator's PeerInfo JSON ({\"grpc-address\":\"host:port\",...}) or"
              + " a bare host:port";
    }
    if (why != null) {
      registered.remove(k);
      if (!v.equals(unreadable.get(k))
          && warnings.warn(UNREADABLE_WARNINGS, "ignoring etcd key {}: {}", k, why)) {
        unreadable.put(k, v);
      }
      return;
    }
    if (problems.isEmpty()) {
      unreadable.remove(k);
    } else if (!v.equals(unreadable.get(k))
        && warnings.warn(
            UNREADABLE_WARNINGS,
            "etcd key {}: {}; keeping the member on the ring at its grpc-address {}, its peer"
                + " traffic going to its host at this node's peer port",
            k,
            problems.get(0),
            info.grpcAddress())) {
      unreadable.put(k, v);
    }
    registered.put(k, info);
  }

  /**
   * Returns why {@code key}, read under {@code prefix}, is the registration of a cluster whose key
   * prefix starts with this one's ({@code /weir2} or the nested {@code /weir/eu/} read under {@code
   * /weir} or {@code /weir/}): the rest of the key is longer than the registration's {@code
   * grpcAddress} and ends with it. Returns {@code null} for any other key, including one named
   * after another address (Gubernator v2 keys its registrations by their HTTP address).
   */
  static String otherPrefix(String prefix, String key, String grpcAddress) {
    String rest = key.substring(Math.min(key.length(), prefix.length()));
    if (rest.length() <= grpcAddress.length() || !rest.endsWith(grpcAddress)) {
      return null;
    }
    String theirs = key.substring(0, key.length() - grpcAddress.length());
    return "it is not the prefix "
        + prefix
        + " followed by its grpc-address "
        + grpcAddress
        + " but a registration under the prefix "
        + theirs
        + " of another cluster; no cluster's prefix may start another's: end each with / and do"
        + " not nest them";
  }

  /**
   * Returns the level of the start-up notice about {@code prefix}: INFO for Gubernator's default
   * ({@value #GUBERNATOR_KEY_PREFIX}), which a cluster sharing etcd with Gubernator must keep, WARN
   * for any other.
   */
  static Level prefixLevel(String prefix) {
    return prefix.equals(GUBERNATOR_KEY_PREFIX) ? Level.INFO : Level.WARN;
  }

  /**
   * Returns the start-up notice about a key {@code prefix}, set by {@code variable}, that does not
   * end with {@code /}, or {@code null} when it does: etcd lists under it the keys of every prefix
   * it starts. Not refused, as Gubernator's default ({@value #GUBERNATOR_KEY_PREFIX}) has none
   * (see {@link #prefixLevel}).
   */
  static String prefixWarning(String variable, String prefix) {
    if (prefix.endsWith("/")) {
      return null;
    }
    return variable
        + " is '"
        + prefix
        + "', which does not end with '/': etcd lists under it the keys of every prefix it"
        + " starts ('"
        + prefix
        + "2'); end each cluster's prefix with / unless nodes that use it as is (Gubernator's"
        + " default) share it";
  }

  /** Returns {@code value}, cut to its first {@value #VALUE_SHOWN} characters. */
  private static String shown(String value) {
    return value.length() <= VALUE_SHOWN ? value : value.substring(0, VALUE_SHOWN) + "...";
  }

  private void deliver() {
    Set<String> peers = new TreeSet<>();
    Map<String, String> listeners = new HashMap<>();
    int otherDataCenter = 0;
    for (PeerInfo info : registered.values()) {
      if (!info.dataCenter().equals(settings.dataCenter())) {
        otherDataCenter++;
        continue;
      }
      peers.add(info.grpcAddress());
      if (!info.peerAddress().isEmpty()) {
        listeners.put(info.grpcAddress(), info.peerAddress());
      }
    }
    if (otherDataCenter != ignoredOtherDataCenter) {
      ignoredOtherDataCenter = otherDataCenter;
      log.info(
          "ignoring {} etcd registration(s) under {} of a data center other than this node's '{}'"
              + " (WEIR_ETCD_DATA_CENTER, else WEIR_DATA_CENTER)",
          otherDataCenter,
          settings.keyPrefix(),
          settings.dataCenter());
    }
    Map<String, String> moved = Map.copyOf(listeners);
    boolean listenersMoved = !moved.equals(peerAddresses);
    peerAddresses = moved;
    peers.add(self);
    // A member that came back under the same address with another peer port (a new lease) is
    // delivered again, so that the node calls it where it listens now.
    if (!peers.equals(delivered) || listenersMoved) {
      delivered = Set.copyOf(peers);
      listener.accept(delivered);
    }
  }

  private <T> T await(CompletableFuture<T> future)
      throws ExecutionException, TimeoutException, InterruptedException {
    try {
      return future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } finally {
      future.cancel(true);
    }
  }

  private void onExecutor(Task task) throws Exception {
    CompletableFuture<Void> done = new CompletableFuture<>();
    executor.execute(
        () -> {
          try {
            task.run();
            done.complete(null);
          } catch (Exception | Error e) {
            done.completeExceptionally(e);
          }
        });
    try {
      done.get();
    } catch (ExecutionException e) {
      if (e.getCause() instanceof Exception cause) {
        throw cause;
      }
      throw e;
    }
  }

  private static String describe(Throwable e) {
    Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
    String message = cause.getMessage();
    return cause.getClass().getSimpleName() + (message == null ? "" : ": " + message);
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  private interface Task {
    void run() throws Exception;
  }
}
