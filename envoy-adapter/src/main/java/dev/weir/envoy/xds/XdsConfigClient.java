package dev.weir.envoy.xds;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.time.Clock;
import dev.weir.core.time.Scheduler;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DescriptorConfigException;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.config.NoDomainLoaded;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.proto.ratelimit.config.v3.RateLimitConfig;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The xDS config source: an ADS state-of-the-world stream that subscribes to {@value #TYPE_URL}
 * (one resource per domain, as Envoy Gateway serves them) and keeps a {@link ConfigHolder} at the
 * last set of resources that loaded.
 *
 * <p>Each response carries every resource; they are written as descriptor YAML (see {@link
 * RateLimitConfigYaml}) and compiled like files, all or nothing. A set that loads replaces the
 * config, counts {@code config_load_success} and is ACKed (its version and nonce echoed); one that
 * does not, an {@link Error} thrown while loading it included, keeps the last good config, counts
 * {@code config_load_error} and is NACKed with the errors as {@code error_detail} (the last
 * accepted version echoed). An empty set loads (a config
 * without domains) only while no domain has loaded; after that it is NACKed like an invalid set,
 * since it would switch every domain's limits off, as an empty config folder would (the file
 * source refuses that reload too). When the stream ends or fails, a new one is opened
 * after a backoff ({@link XdsSettings.Backoff}, back to its first wait once a set was accepted
 * or after a stream that had stayed open at least the longest wait, timed on the clock) on the
 * scheduler; the last good config keeps
 * answering meanwhile. Each stream opens on a new channel, and a stream's channel is shut down
 * when the stream ends, so a reconnect is timed by that backoff alone: a channel that failed to
 * connect would wait out its own connection backoff first, up to two minutes, whatever the
 * settings say. A stream that cannot be opened (its channel failing to build, say) is logged and
 * retried after the same backoff.
 */
public final class XdsConfigClient implements AutoCloseable {

  /** The resource type subscribed to. */
  public static final String TYPE_URL =
      "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig";

  /** gRPC {@code INVALID_ARGUMENT}, the code of a NACK's error detail. */
  private static final int INVALID_ARGUMENT = 3;

  private static final Logger LOG = LoggerFactory.getLogger(XdsConfigClient.class);

  private final XdsSettings settings;
  private final Supplier<ManagedChannel> channels;
  private final Compiler compiler;
  private final ConfigHolder holder;
  private final EnvoyMetrics metrics;
  private final DoubleSupplier random;
  private final Clock clock;
  private final RateLimitedLogger streamWarnings;
  private final Node node;
  private Scheduler scheduler;
  private ManagedChannel channel;
  private StreamObserver<DiscoveryRequest> requests;
  private int stream;
  private int failures;
  private long openedAt;
  private String acceptedVersion = "";
  private boolean closed;
  private Scheduler.Task retry;

  /**
   * Creates a client that subscribes over a new channel of {@code channels} for each stream, as
   * {@code settings} say, compiles with
   * {@code loader} into {@code holder}, counts loads in {@code metrics}, spreads its retries with
   * {@code random} (uniform in [0, 1)), and times its streams and rate-limits its warnings on
   * {@code clock}.
   */
  public XdsConfigClient(
      XdsSettings settings,
      Supplier<ManagedChannel> channels,
      ConfigLoader loader,
      ConfigHolder holder,
      EnvoyMetrics metrics,
      Clock clock,
      DoubleSupplier random) {
    this(settings, channels, loader::compileWritten, holder, metrics, clock, random);
  }

  /** As the public constructor, compiling the written files with {@code compiler}. */
  XdsConfigClient(
      XdsSettings settings,
      Supplier<ManagedChannel> channels,
      Compiler compiler,
      ConfigHolder holder,
      EnvoyMetrics metrics,
      Clock clock,
      DoubleSupplier random) {
    this.settings = settings;
    this.channels = channels;
    this.compiler = compiler;
    this.holder = holder;
    this.metrics = metrics;
    this.random = random;
    this.clock = clock;
    this.streamWarnings = new RateLimitedLogger(LOG, clock, Duration.ofMinutes(1));
    this.node = node(settings);
  }

  private static Node node(XdsSettings settings) {
    Struct.Builder metadata = Struct.newBuilder();
    settings
        .nodeMetadata()
        .forEach((k, v) -> metadata.putFields(k, Value.newBuilder().setStringValue(v).build()));
    return Node.newBuilder()
        .setId(settings.nodeId())
        .setMetadata(metadata)
        .setUserAgentName("weir")
        .build();
  }

  /** Opens the stream; later ones are opened on {@code scheduler}. */
  public synchronized void start(Scheduler scheduler) {
    if (this.scheduler != null) {
      throw new IllegalStateException("already started");
    }
    this.scheduler = scheduler;
    LOG.info(
        "Subscribing to rate limit configuration at {} as node '{}' ({})",
        settings.serverAddress(),
        settings.nodeId(),
        TYPE_URL);
    open();
  }

  /** Returns the version of the last set of resources that loaded, empty before one did. */
  public synchronized Optional<String> acceptedVersion() {
    return acceptedVersion.isEmpty() ? Optional.empty() : Optional.of(acceptedVersion);
  }

  private synchronized void open() {
    if (closed) {
      return;
    }
    int id = ++stream;
    retry = null;
    try {
      shutDownChannel();
      channel = channels.get();
      openedAt = clock.monotonicNanos();
      requests =
          AggregatedDiscoveryServiceGrpc.newStub(channel)
              .streamAggregatedResources(new Responses(id));
      requests.onNext(
          DiscoveryRequest.newBuilder()
              .setNode(node)
              .setTypeUrl(TYPE_URL)
              .setVersionInfo(acceptedVersion)
              .build());
    } catch (RuntimeException | Error e) {
      // an Error (a class that failed to load, say) is caught too: thrown on, it would vanish
      // into the scheduled task, and reconnecting would stop without a word
      ++stream;
      requests = null;
      shutDownChannel();
      if (retry != null) {
        // the call failed already, on this thread, and its end scheduled the reconnect
        return;
      }
      Duration delay = settings.retry().delay(failures++, random.getAsDouble());
      streamWarnings.warn(
          "xds-open",
          "Could not open an xDS stream to {} ({}); keeping configuration version '{}',"
              + " reconnecting in {} ms",
          settings.serverAddress(),
          e.toString(),
          acceptedVersion,
          delay.toMillis());
      retry = scheduler.schedule(this::open, delay);
    }
  }

  private void shutDownChannel() {
    if (channel != null) {
      channel.shutdownNow();
      channel = null;
    }
  }

  private synchronized void onResponse(int id, DiscoveryResponse response) {
    if (id != stream || closed) {
      return;
    }
    if (!response.getTypeUrl().equals(TYPE_URL)) {
      LOG.debug("ignoring xDS resources of type {}", response.getTypeUrl());
      return;
    }
    DiscoveryRequest.Builder reply =
        DiscoveryRequest.newBuilder()
            .setNode(node)
            .setTypeUrl(TYPE_URL)
            .setResponseNonce(response.getNonce());
    EnvoyConfig config;
    try {
      config = load(response.getResourcesList());
      refuseRemovingEveryDomain(config);
    } catch (DescriptorConfigException | RuntimeException | Error e) {
      // an Error (one the heap or the stack ran out with, say) is refused too: thrown on, it
      // would cancel the stream unNACKed, and each reconnect would fetch the same set again
      metrics.configLoadError();
      // a NACK's message must not be null: the setter would throw, failing the stream unNACKed
      String detail =
          e instanceof Error
              ? e.toString()
              : e.getMessage() != null ? e.getMessage() : e.getClass().getName();
      LOG.warn(
          "Error loading new configuration version '{}' from xDS, keeping version '{}': {}",
          response.getVersionInfo(),
          acceptedVersion,
          detail);
      reply.setErrorDetail(
          com.google.rpc.Status.newBuilder().setCode(INVALID_ARGUMENT).setMessage(detail));
      requests.onNext(reply.setVersionInfo(acceptedVersion).build());
      return;
    }
    holder.set(config);
    acceptedVersion = response.getVersionInfo();
    // only an accepted set shows the server healthy: one that answers and then drops the stream
    // each time must still be backed off from
    failures = 0;
    requests.onNext(reply.setVersionInfo(acceptedVersion).build());
    try {
      metrics.configLoadSuccess();
      LOG.info(
          "Loaded rate limit configuration version '{}' from xDS: domains {}",
          acceptedVersion,
          new TreeSet<>(config.domains().keySet()));
    } catch (RuntimeException e) {
      // thrown on, it would make gRPC cancel a stream whose set loaded and was acknowledged
      LOG.warn("Could not count or log loading xDS configuration version '{}'", acceptedVersion, e);
    }
  }

  /**
   * Throws when {@code config} has no domain while the config in the holder has some: loading it
   * would answer OK to every request of those domains.
   */
  private void refuseRemovingEveryDomain(EnvoyConfig config) throws DescriptorConfigException {
    if (!config.domains().isEmpty()) {
      return;
    }
    Optional<EnvoyConfig> current = holder.current();
    if (current.isPresent() && !current.get().domains().isEmpty()) {
      throw NoDomainLoaded.xdsSetWithout(current.get().domains().keySet());
    }
  }

  private EnvoyConfig load(List<Any> resources) throws DescriptorConfigException {
    List<ConfigFile> files = new ArrayList<>(resources.size());
    for (int i = 0; i < resources.size(); i++) {
      Any any = resources.get(i);
      if (!any.getTypeUrl().equals(TYPE_URL)) {
        throw new DescriptorConfigException(
            "xDS resource " + i + ": type " + any.getTypeUrl() + " is not " + TYPE_URL);
      }
      RateLimitConfig config;
      try {
        config = RateLimitConfig.parseFrom(any.getValue());
      } catch (InvalidProtocolBufferException e) {
        throw new DescriptorConfigException(
            "xDS resource " + i + ": not a RateLimitConfig: " + e.getMessage());
      }
      String name = config.getName().isEmpty() ? "xDS resource " + i : config.getName();
      files.add(new ConfigFile(name, RateLimitConfigYaml.of(config)));
    }
    return compiler.compile(
        files, warning -> LOG.warn("xDS configuration loads with a warning: {}", warning));
  }

  private synchronized void onEnd(int id, Throwable failure) {
    if (id != stream || closed) {
      return;
    }
    requests = null;
    shutDownChannel();
    if (clock.monotonicNanos() - openedAt >= settings.retry().max().toNanos()) {
      // a stream that stayed up that long was healthy even without a response: a snapshot cache
      // answers a resubscription at the accepted version only when something changes, and a
      // server or balancer closing idle or aged streams must not push the waits to the longest
      failures = 0;
    }
    Duration delay = settings.retry().delay(failures++, random.getAsDouble());
    streamWarnings.warn(
        "xds-stream",
        "xDS stream to {} ended ({}); keeping configuration version '{}', reconnecting in {} ms",
        settings.serverAddress(),
        failure == null ? "closed by the server" : Status.fromThrowable(failure),
        acceptedVersion,
        delay.toMillis());
    retry = scheduler.schedule(this::open, delay);
  }

  /**
   * Closes the stream and its channel and stops reconnecting; the config last loaded stays in the
   * holder.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (retry != null) {
      retry.cancel();
    }
    if (requests != null) {
      requests.onCompleted();
      requests = null;
    }
    shutDownChannel();
  }

  /** Compiles the files written from one set of resources, as {@link ConfigLoader} does. */
  @FunctionalInterface
  interface Compiler {
    EnvoyConfig compile(List<ConfigFile> files, Consumer<String> warnings)
        throws DescriptorConfigException;
  }

  /** The responses of one stream. */
  private final class Responses implements StreamObserver<DiscoveryResponse> {
    private final int id;

    Responses(int id) {
      this.id = id;
    }

    @Override
    public void onNext(DiscoveryResponse response) {
      onResponse(id, response);
    }

    @Override
    public void onError(Throwable t) {
      onEnd(id, t);
    }

    @Override
    public void onCompleted() {
      onEnd(id, null);
    }
  }
}
