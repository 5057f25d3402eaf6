package dev.weir.core.discovery.dns;

import dev.weir.core.discovery.PeerAddress;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.metrics.WeirMetrics;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Membership from DNS: every poll resolves the configured names, and the peers are each address with
 * this node's gRPC port, plus this node. A lookup that fails or finds nothing keeps the last peer set,
 * is reported by {@link #problem()} and counts one {@code dns} discovery error per poll. The problem
 * clears once the next successful lookup's peers have been delivered, so a health check never sees
 * the source recovered while the ring still holds the peers kept through the failure.
 */
public final class DnsDiscovery implements PeerDiscovery {
  private static final Logger log = LoggerFactory.getLogger(DnsDiscovery.class);
  /**
   * The mechanism's name as {@code WEIR_PEER_DISCOVERY_TYPE} spells it, also the {@code mechanism}
   * label of the discovery error counter.
   */
  public static final String MECHANISM = "dns";

  private final DnsSettings settings;
  private final String self;
  private final int port;
  private final Resolver resolver;
  private final ScheduledExecutorService scheduler;
  private final WeirMetrics metrics;
  private final RateLimitedLogger warnings = RateLimitedLogger.of(DnsDiscovery.class);

  private Consumer<Set<String>> listener = peers -> {};
  private Set<String> delivered = Set.of();
  private ScheduledFuture<?> poller;
  private volatile String problem = "";

  /**
   * Creates discovery for the node advertised at {@code selfAddress} (whose port every peer shares),
   * resolving through {@code resolver} and polling on {@code scheduler}.
   */
  public DnsDiscovery(
      DnsSettings settings, String selfAddress, Resolver resolver, ScheduledExecutorService scheduler) {
    this(settings, selfAddress, resolver, scheduler, WeirMetrics.NOOP);
  }

  /** Creates discovery as above that counts each failed poll in {@code metrics}. */
  public DnsDiscovery(
      DnsSettings settings,
      String selfAddress,
      Resolver resolver,
      ScheduledExecutorService scheduler,
      WeirMetrics metrics) {
    this.metrics = metrics;
    this.settings = settings;
    this.self = selfAddress;
    this.port = PeerAddress.portOf(selfAddress);
    this.resolver = resolver;
    this.scheduler = scheduler;
  }

  /** Resolves once now (delivering the result, or this node alone on failure), then every poll interval. */
  @Override
  public synchronized void start(Consumer<Set<String>> listener) {
    this.listener = listener;
    poll();
    long every = settings.pollInterval().toNanos();
    poller = scheduler.scheduleWithFixedDelay(this::poll, every, every, TimeUnit.NANOSECONDS);
  }

  @Override
  public String problem() {
    return problem;
  }

  @Override
  public synchronized void close() {
    if (poller != null) {
      poller.cancel(false);
      poller = null;
    }
    listener = peers -> {};
  }

  private synchronized void poll() {
    Set<String> peers = new TreeSet<>();
    for (String fqdn : settings.fqdns()) {
      List<InetAddress> addresses;
      try {
        addresses = resolver.resolve(fqdn);
      } catch (UnknownHostException | RuntimeException e) {
        fail(fqdn, e.getClass().getSimpleName() + ": " + e.getMessage());
        return;
      }
      if (addresses.isEmpty()) {
        fail(fqdn, "no A or AAAA records");
        return;
      }
      for (InetAddress address : addresses) {
        peers.add(PeerAddress.of(address, port));
      }
    }
    deliver(peers);
    if (!problem.isEmpty()) {
      log.info("DNS lookup of {} succeeds again", settings.fqdns());
    }
    problem = "";
  }

  private void fail(String fqdn, String why) {
    problem = "DNS lookup of " + fqdn + " failed (" + why + "); keeping the last "
        + Math.max(1, delivered.size()) + " known peers";
    metrics.discoveryError(MECHANISM);
    warnings.warn("dns " + fqdn, "{}", problem);
    if (delivered.isEmpty()) {
      deliver(Set.of());
    }
  }

  private void deliver(Set<String> peers) {
    Set<String> all = new TreeSet<>(peers);
    all.add(self);
    if (!all.equals(delivered)) {
      delivered = Set.copyOf(all);
      listener.accept(delivered);
    }
  }
}
