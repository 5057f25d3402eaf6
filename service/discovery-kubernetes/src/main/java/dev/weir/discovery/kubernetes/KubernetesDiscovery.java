package dev.weir.discovery.kubernetes;

import dev.weir.core.discovery.PeerDiscovery;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.metrics.WeirMetrics;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Membership from the Kubernetes API: an informer over the peers' EndpointSlices (default) or pods,
 * recomputing the whole peer set from the informer's cache on every event, with this node always
 * included.
 *
 * <p>The informer lists, then watches; when the list or the watch fails it retries with fabric8's
 * backoff and relists, so discovery never stops. While it is not watching, the last peers stay in place
 * and {@link #problem()} says why. {@link #start} waits up to {@link #FIRST_LIST_WAIT} for the first
 * list and delivers it before returning, so that a joining node sees its ready peers and asks them
 * for the counts of the keys it will own.
 *
 * <p>Errors: fabric8 reports each failed list-and-watch attempt (and each watch that ends with an
 * error it will not retry itself) to the informer's exception handler; each counts one {@code k8s}
 * discovery error and {@link #problem()} names it until the watch is seen up again. A watch that
 * ends is instead reconnected inside fabric8 without any callback, after the client's watch
 * reconnect interval: fabric8 ends each watch itself every 5 to 10 minutes to renew it, and relists
 * after the same interval when a watch expires (HTTP 410 Gone). So a check on the discovery
 * scheduler looks at the informer every {@link #WATCH_CHECK}, and a watch that is down for less
 * than that interval plus {@link #WATCH_RENEWAL_ALLOWANCE} is a renewal: no problem, no error. A
 * watch found down longer counts one error, unless a failure was reported since it was last up,
 * and is reported until it is back. Without a scheduler there is no check, and {@link #problem()}
 * reports every moment without a watch.
 */
public final class KubernetesDiscovery implements PeerDiscovery {
  /** The label EndpointSlices carry with the name of their Service. */
  public static final String SERVICE_NAME_LABEL = "kubernetes.io/service-name";

  private static final Logger log = LoggerFactory.getLogger(KubernetesDiscovery.class);
  private static final Duration RESYNC = Duration.ofMinutes(5);
  /**
   * The mechanism's name as {@code WEIR_PEER_DISCOVERY_TYPE} spells it, also the {@code mechanism}
   * label of the discovery error counter.
   */
  public static final String MECHANISM = "k8s";

  /**
   * How long {@link #start} waits for the informer's first list before it delivers this node alone
   * and returns, leaving the peers to follow once listed.
   */
  public static final Duration FIRST_LIST_WAIT = Duration.ofSeconds(5);

  /** How often the watch state is checked for a dropped connection. */
  static final Duration WATCH_CHECK = Duration.ofSeconds(1);

  /**
   * How long a watch may stay down beyond the client's watch reconnect interval and still be a
   * renewal, covering the new watch's (or, after an HTTP 410 Gone, the relist's) round trips.
   */
  public static final Duration WATCH_RENEWAL_ALLOWANCE = Duration.ofSeconds(2);

  private final KubernetesClient client;
  private final boolean ownsClient;
  private final KubernetesSettings settings;
  private final String self;
  private final String namespace;
  private final WeirMetrics metrics;
  private final ScheduledExecutorService scheduler;
  private final Duration firstListWait;
  private final int downChecks;
  private final RateLimitedLogger warnings = RateLimitedLogger.of(KubernetesDiscovery.class);
  private final AtomicLong failures = new AtomicLong();

  private Consumer<Set<String>> listener = peers -> {};
  private Set<String> delivered = Set.of();
  private SharedIndexInformer<? extends HasMetadata> informer;
  private volatile String lastError = "";
  private volatile String unmatched = "";
  private volatile boolean running;
  private volatile boolean listedOnce;
  private ScheduledFuture<?> watchCheck;
  private int checksDown;
  private volatile boolean downPastGrace;
  private long failuresWhenLastUp = -1;

  /**
   * Creates discovery over {@code client}; {@code ownsClient} says whether {@link #close()} closes it.
   * {@code advertiseAddress} is this node's address when {@code settings} has no pod IP.
   */
  public KubernetesDiscovery(
      KubernetesClient client, boolean ownsClient, KubernetesSettings settings, String advertiseAddress) {
    this(client, ownsClient, settings, advertiseAddress, WeirMetrics.NOOP, null);
  }

  /**
   * Creates discovery as above that counts each list or watch failure in {@code metrics}, checking
   * for dropped watches on {@code scheduler} (none are counted when it is null).
   */
  public KubernetesDiscovery(
      KubernetesClient client,
      boolean ownsClient,
      KubernetesSettings settings,
      String advertiseAddress,
      WeirMetrics metrics,
      ScheduledExecutorService scheduler) {
    this(client, ownsClient, settings, advertiseAddress, metrics, scheduler, FIRST_LIST_WAIT);
  }

  /**
   * Creates discovery as above whose {@link #start} waits up to {@code firstListWait} for the first
   * list.
   */
  KubernetesDiscovery(
      KubernetesClient client,
      boolean ownsClient,
      KubernetesSettings settings,
      String advertiseAddress,
      WeirMetrics metrics,
      ScheduledExecutorService scheduler,
      Duration firstListWait) {
    this.firstListWait = firstListWait;
    this.metrics = metrics;
    this.scheduler = scheduler;
    this.client = client;
    this.ownsClient = ownsClient;
    this.settings = settings;
    this.self = settings.selfAddress(advertiseAddress);
    this.namespace = settings.namespace().orElseGet(() -> orDefault(client.getNamespace()));
    this.downChecks = downChecks(watchGrace(client));
  }

  /**
   * Returns how long a watch of {@code client} may be down and still be a renewal: its watch
   * reconnect interval plus {@link #WATCH_RENEWAL_ALLOWANCE}.
   */
  static Duration watchGrace(KubernetesClient client) {
    Integer reconnect = client.getConfiguration().getWatchReconnectInterval();
    return Duration.ofMillis(reconnect == null ? 0 : Math.max(0, reconnect)).plus(WATCH_RENEWAL_ALLOWANCE);
  }

  /**
   * Returns how many checks {@link #WATCH_CHECK} apart in a row must find the watch down for it to
   * have been down longer than {@code grace}.
   */
  static int downChecks(Duration grace) {
    long every = WATCH_CHECK.toNanos();
    return (int) ((grace.toNanos() + every - 1) / every) + 1;
  }

  /** Creates discovery with a client configured from the environment (in-cluster service account). */
  public static KubernetesDiscovery create(KubernetesSettings settings, String advertiseAddress) {
    return create(settings, advertiseAddress, WeirMetrics.NOOP, null);
  }

  /**
   * Creates discovery as above that counts each list or watch failure in {@code metrics}, checking
   * for dropped watches on {@code scheduler}.
   */
  public static KubernetesDiscovery create(
      KubernetesSettings settings,
      String advertiseAddress,
      WeirMetrics metrics,
      ScheduledExecutorService scheduler) {
    return new KubernetesDiscovery(
        new KubernetesClientBuilder().build(), true, settings, advertiseAddress, metrics, scheduler);
  }

  /** Returns this node's peer address. */
  public String selfAddress() {
    return self;
  }

  /**
   * Starts the informer and delivers the peers of its first list before returning; when that list
   * has not come within {@link #FIRST_LIST_WAIT} (the API server is slow or unreachable), logs a
   * WARN, delivers this node alone and returns, and the peers follow once listed.
   */
  @Override
  public void start(Consumer<Set<String>> listener) {
    CompletableFuture<Void> listed;
    synchronized (this) {
      listed = startInformer(listener);
    }
    boolean inTime;
    try {
      listed.get(firstListWait.toNanos(), TimeUnit.NANOSECONDS);
      inTime = true;
    } catch (TimeoutException | ExecutionException e) {
      inTime = false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      inTime = false;
    }
    synchronized (this) {
      if (!running) {
        return;
      }
      if (!inTime) {
        log.warn(
            "kubernetes {} not listed within {}: starting with this node alone; its peers follow once"
                + " listed{}",
            what(),
            firstListWait,
            lastError.isEmpty() ? "" : " (" + lastError + ")");
      }
      // Nothing delivered yet: the list has not come, or came just after the wait ran out and
      // delivered itself.
      if (delivered.isEmpty()) {
        deliver(Set.of());
      }
      if (scheduler != null) {
        long every = WATCH_CHECK.toNanos();
        watchCheck =
            scheduler.scheduleWithFixedDelay(this::checkWatch, every, every, TimeUnit.NANOSECONDS);
      }
    }
  }

  // Creates and starts the informer; the future completes once its first list was delivered.
  private CompletableFuture<Void> startInformer(Consumer<Set<String>> listener) {
    this.listener = listener;
    running = true;
    settings.unusedSelectorWarning().ifPresent(log::warn);
    CompletableFuture<Void> listed = new CompletableFuture<>();
    if (settings.mechanism() == KubernetesSettings.Mechanism.PODS) {
      SharedIndexInformer<Pod> pods =
          client.pods().inNamespace(namespace).withLabelSelector(settings.selector()).runnableInformer(RESYNC.toMillis());
      informer =
          watch(
              pods,
              all -> PeerSelection.fromPods(all, settings.podPort(), settings.podIp()),
              this::podsUnmatched,
              listed);
    } else {
      SharedIndexInformer<EndpointSlice> slices =
          client
              .discovery()
              .v1()
              .endpointSlices()
              .inNamespace(namespace)
              .withLabel(SERVICE_NAME_LABEL, settings.serviceName())
              .runnableInformer(RESYNC.toMillis());
      informer =
          watch(
              slices,
              all -> PeerSelection.fromEndpointSlices(all, settings.podPort(), PeerSelection.familyOf(self)),
              this::slicesUnmatched,
              listed);
    }
    return listed;
  }

  /**
   * Starts {@code inf}, delivering the peers {@code select} finds in its cache on every event and
   * once its first list is in, then completing {@code listed}. The cache is read and its peers
   * delivered under this discovery's lock, so that a delivery never replaces a newer one.
   */
  private <T extends HasMetadata> SharedIndexInformer<T> watch(
      SharedIndexInformer<T> inf,
      Function<List<T>, Set<String>> select,
      Function<List<T>, String> unmatchedCheck,
      CompletableFuture<Void> listed) {
    Runnable refresh =
        () -> {
          synchronized (this) {
            List<T> all = inf.getStore().list();
            setUnmatched(unmatchedCheck.apply(all));
            deliver(select.apply(all));
          }
        };
    inf.addEventHandler(
        new ResourceEventHandler<T>() {
          @Override
          public void onAdd(T obj) {
            refresh.run();
          }

          @Override
          public void onUpdate(T oldObj, T newObj) {
            refresh.run();
          }

          @Override
          public void onDelete(T obj, boolean deletedFinalStateUnknown) {
            refresh.run();
          }
        });
    inf.exceptionHandler(
        (started, error) -> {
          failed(error.getClass().getSimpleName() + ": " + error.getMessage());
          return true;
        });
    inf.start()
        .whenComplete(
            (ok, error) -> {
              if (error == null) {
                lastError = "";
                listedOnce = true;
                refresh.run();
                listed.complete(null);
              } else {
                listed.completeExceptionally(error);
              }
            });
    return inf;
  }

  private synchronized void setUnmatched(String problem) {
    if (problem.equals(unmatched)) {
      return;
    }
    if (!problem.isEmpty()) {
      log.warn("{}", problem);
    } else {
      log.info("kubernetes {} now match this node's configuration", what());
    }
    unmatched = problem;
  }

  // In pods mode a correct selector selects this node's own pod, listed (ready or not) from the
  // moment it has an IP; without a known pod IP, any pod.
  private String podsUnmatched(List<Pod> pods) {
    boolean matched =
        settings.podIp().isEmpty()
            ? !pods.isEmpty()
            : pods.stream()
                .map(p -> p.getStatus() == null ? null : p.getStatus().getPodIP())
                .anyMatch(ip -> PeerSelection.isSelf(ip, settings.podIp()));
    if (matched) {
      return "";
    }
    return settings.selectorVariable()
        + "="
        + settings.selector()
        + " matches no pod"
        + settings.podIp().map(ip -> " with this node's IP " + ip).orElse("")
        + " in namespace "
        + namespace
        + ": the selector must select this node's own pod; this node's peers are not those of the"
        + " pods it selects";
  }

  // The control plane keeps at least one EndpointSlice, possibly empty, for every Service with a
  // selector.
  private String slicesUnmatched(List<EndpointSlice> slices) {
    if (!slices.isEmpty()) {
      return "";
    }
    return settings.serviceNameVariable()
        + "="
        + settings.serviceName()
        + " matches no EndpointSlice in namespace "
        + namespace
        + " (none is labelled "
        + SERVICE_NAME_LABEL
        + "="
        + settings.serviceName()
        + "): check that the Service exists under that name and has a selector; this node stays alone"
        + " until one does";
  }

  private synchronized void failed(String why) {
    lastError = why;
    failures.incrementAndGet();
    metrics.discoveryError(MECHANISM);
    warnings.warn("k8s", "kubernetes {} watch failed, retrying: {}", what(), why);
  }

  private void checkWatch() {
    SharedIndexInformer<? extends HasMetadata> inf;
    synchronized (this) {
      inf = informer;
    }
    if (inf == null) {
      return;
    }
    if (inf.isWatching()) {
      watchUp(inf);
      return;
    }
    synchronized (this) {
      checksDown++;
      if (checksDown == downChecks) {
        downPastGrace = true;
        if (failuresWhenLastUp == failures.get()) {
          failed("watch connection lost, reconnecting");
        }
      }
    }
  }

  // Records that inf is watching: earlier failures no longer describe it.
  private synchronized void watchUp(SharedIndexInformer<? extends HasMetadata> inf) {
    if (!listedOnce || !inf.isWatching()) {
      return;
    }
    if (checksDown >= downChecks) {
      log.info("kubernetes {} watch established again", what());
    }
    checksDown = 0;
    downPastGrace = false;
    lastError = "";
    failuresWhenLastUp = failures.get();
  }

  /**
   * Returns why discovery is not working: the watch is starting, or it has been down past the
   * renewal grace (see the class description) or since a failure, or the peers do not match this
   * node's configuration; empty while it works.
   */
  @Override
  public String problem() {
    SharedIndexInformer<? extends HasMetadata> inf;
    synchronized (this) {
      inf = informer;
    }
    if (inf == null || (!listedOnce && lastError.isEmpty())) {
      return running ? "kubernetes " + what() + " watch is starting; this node alone so far" : "";
    }
    if (inf.isWatching()) {
      watchUp(inf);
      return unmatched;
    }
    String why = lastError;
    if (why.isEmpty() && scheduler != null && !downPastGrace) {
      return unmatched;
    }
    return "kubernetes " + what() + " watch is down (" + (why.isEmpty() ? "not established yet" : why)
        + "); keeping the last " + delivered.size() + " known peers";
  }

  /** Returns whether the informer is watching now. */
  boolean watching() {
    SharedIndexInformer<? extends HasMetadata> inf;
    synchronized (this) {
      inf = informer;
    }
    return inf != null && inf.isWatching();
  }

  /** Returns how many checks in a row must find the watch down for it to count and be reported. */
  int downChecks() {
    return downChecks;
  }

  @Override
  public void close() {
    SharedIndexInformer<? extends HasMetadata> inf;
    synchronized (this) {
      inf = informer;
      informer = null;
      running = false;
      listener = peers -> {};
      if (watchCheck != null) {
        watchCheck.cancel(false);
        watchCheck = null;
      }
    }
    if (inf != null) {
      inf.close();
    }
    if (ownsClient) {
      client.close();
    }
  }

  private synchronized void deliver(Set<String> peers) {
    Set<String> all = new TreeSet<>(peers);
    all.add(self);
    if (!all.equals(delivered)) {
      delivered = Set.copyOf(all);
      listener.accept(delivered);
    }
  }

  private String what() {
    return settings.mechanism() == KubernetesSettings.Mechanism.PODS
        ? "pods (" + settings.selector() + ") in namespace " + namespace
        : "endpointslices of service " + settings.serviceName() + " in namespace " + namespace;
  }

  private static String orDefault(String ns) {
    return ns == null || ns.isBlank() ? "default" : ns;
  }
}
