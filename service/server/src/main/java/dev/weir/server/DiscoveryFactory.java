package dev.weir.server;

import dev.weir.core.discovery.CoalescedDiscovery;
import dev.weir.core.discovery.CoalescingListener;
import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.discovery.dns.DnsDiscovery;
import dev.weir.core.discovery.dns.Resolver;
import dev.weir.core.metrics.WeirMetrics;
import dev.weir.discovery.etcd.EtcdDiscovery;
import dev.weir.discovery.kubernetes.KubernetesDiscovery;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Function;

/**
 * Builds the configured {@link PeerDiscovery}, wrapped so that every mechanism's updates are
 * coalesced before they reach the ring. The etcd, Kubernetes and DNS mechanisms report each failure
 * to {@link WeirMetrics#discoveryError} and whether they currently work (their {@link
 * PeerDiscovery#problem()} is empty) to {@link WeirMetrics#watchDiscoveryHealth}; static discovery
 * cannot fail and reports neither.
 */
public final class DiscoveryFactory {
  private final Function<String, PeerDiscovery> staticDiscovery;
  private final ScheduledExecutorService scheduler;
  private final Resolver resolver;
  private final Duration window;
  private final WeirMetrics metrics;

  /**
   * Creates a factory. {@code staticDiscovery} builds the static mechanism for an advertise address
   * (the cluster module owns it); {@code scheduler} runs DNS polls and coalescing windows.
   */
  public DiscoveryFactory(Function<String, PeerDiscovery> staticDiscovery, ScheduledExecutorService scheduler) {
    this(staticDiscovery, scheduler, WeirMetrics.NOOP);
  }

  /** Creates a factory as above whose mechanisms count their failures in {@code metrics}. */
  public DiscoveryFactory(
      Function<String, PeerDiscovery> staticDiscovery,
      ScheduledExecutorService scheduler,
      WeirMetrics metrics) {
    this(staticDiscovery, scheduler, Resolver.SYSTEM, CoalescingListener.DEFAULT_WINDOW, metrics);
  }

  /** Creates a factory with a given DNS resolver and coalescing window. */
  public DiscoveryFactory(
      Function<String, PeerDiscovery> staticDiscovery,
      ScheduledExecutorService scheduler,
      Resolver resolver,
      Duration window) {
    this(staticDiscovery, scheduler, resolver, window, WeirMetrics.NOOP);
  }

  /**
   * Creates a factory with a given DNS resolver and coalescing window whose mechanisms count their
   * failures in {@code metrics}.
   */
  public DiscoveryFactory(
      Function<String, PeerDiscovery> staticDiscovery,
      ScheduledExecutorService scheduler,
      Resolver resolver,
      Duration window,
      WeirMetrics metrics) {
    this.staticDiscovery = staticDiscovery;
    this.scheduler = scheduler;
    this.resolver = resolver;
    this.window = window;
    this.metrics = metrics;
  }

  /**
   * Returns the discovery {@code settings} select for the node whose configured advertise address is
   * {@code configuredAdvertise} (adjusted by {@link DiscoverySettings#advertiseAddress}).
   */
  public CoalescedDiscovery create(DiscoverySettings settings, String configuredAdvertise) throws Exception {
    return create(settings, configuredAdvertise, 0);
  }

  /**
   * Returns the discovery as above for a node whose peer listener is at {@code peerPort} (0: none)
   * of its advertised host; mechanisms that carry peer addresses (etcd) register it.
   */
  public CoalescedDiscovery create(
      DiscoverySettings settings, String configuredAdvertise, int peerPort) throws Exception {
    String self = settings.advertiseAddress(configuredAdvertise);
    PeerDiscovery mechanism =
        switch (settings.type()) {
          case STATIC -> staticDiscovery.apply(self);
          case ETCD -> EtcdDiscovery.create(settings.etcd().orElseThrow(), self, peerPort, metrics);
          case K8S ->
              KubernetesDiscovery.create(
                  settings.kubernetes().orElseThrow(), self, metrics, scheduler);
          case DNS ->
              new DnsDiscovery(settings.dns().orElseThrow(), self, resolver, scheduler, metrics);
        };
    if (settings.type() != DiscoverySettings.Type.STATIC) {
      metrics.watchDiscoveryHealth(settings.type().label(), () -> mechanism.problem().isEmpty());
    }
    return new CoalescedDiscovery(mechanism, scheduler, window);
  }
}
