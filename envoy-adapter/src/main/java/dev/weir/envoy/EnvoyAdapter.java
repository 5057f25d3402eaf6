package dev.weir.envoy;

import dev.weir.http.HttpHandler;
import dev.weir.http.HttpRoute;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.time.Clock;
import dev.weir.core.toplimited.OverLimitRecorder;
import dev.weir.core.time.Scheduler;
import dev.weir.envoy.config.DescriptorConfigException;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.config.NoDomainLoaded;
import dev.weir.envoy.http.JsonHandler;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.reload.ConfigReloader;
import dev.weir.envoy.rlqs.QuotaReports;
import dev.weir.envoy.rlqs.RlqsMetrics;
import dev.weir.envoy.rlqs.RlqsService;
import dev.weir.envoy.rlqs.RlqsSettings;
import dev.weir.envoy.service.EnvoyRateLimitGrpcService;
import dev.weir.envoy.service.MatchTracing;
import dev.weir.envoy.service.ShouldRateLimitHandler;
import dev.weir.envoy.service.UnknownDomains;
import dev.weir.envoy.xds.XdsChannels;
import dev.weir.envoy.xds.XdsConfigClient;
import io.grpc.BindableService;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Envoy adapter assembled for a server: the descriptor config kept fresh by its source (a
 * {@link ConfigReloader} polling files, or an {@link XdsConfigClient} subscribed to a management
 * server), the {@code ShouldRateLimit} gRPC service and the {@code POST /json} handler, all
 * answering through one core {@link RateLimitService}, and on request the {@link RlqsService}
 * over the same config.
 */
public final class EnvoyAdapter implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(EnvoyAdapter.class);

  private final EnvoySettings settings;
  private final ConfigHolder holder;
  private final ConfigReloader reloader;
  private final XdsConfigClient xds;
  private final EnvoyMetrics metrics;
  private final EnvoyRateLimitGrpcService grpcService;
  private final JsonHandler jsonHandler;
  private final CheckMeter meter;

  private EnvoyAdapter(
      EnvoySettings settings,
      ConfigHolder holder,
      ConfigReloader reloader,
      XdsConfigClient xds,
      EnvoyMetrics metrics,
      Answering answering) {
    this.settings = settings;
    this.holder = holder;
    this.reloader = reloader;
    this.xds = xds;
    this.metrics = metrics;
    this.meter = answering.meter();
    ShouldRateLimitHandler handler =
        new ShouldRateLimitHandler(
            holder,
            answering.service(),
            answering.clock(),
            settings,
            metrics,
            answering.limits(),
            answering.meter(),
            answering.overLimit(),
            answering.tracing());
    this.grpcService = new EnvoyRateLimitGrpcService(handler);
    this.jsonHandler = new JsonHandler(handler);
  }

  /**
   * Assembles the adapter from {@code settings}' source: the files at {@code settings.config()},
   * loaded now, or the xDS server, whose TLS files are read now and whose first config arrives
   * after {@link #watch}; applies {@code limits} to descriptors, counts calls with {@code meter}
   * and the rest in {@code metrics}.
   *
   * @throws DescriptorConfigException if the files hold an invalid config, or one that declares no domain
   *     without {@code WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG=true} (which should stop the
   *     server with the errors)
   * @throws dev.weir.core.config.ConfigException if the xDS client's TLS files cannot be read or used
   */
  public static EnvoyAdapter start(
      EnvoySettings settings,
      RateLimitService service,
      Clock clock,
      EnvoyMetrics metrics,
      InputLimits limits,
      CheckMeter meter)
      throws DescriptorConfigException {
    return start(
        settings, service, clock, metrics, limits, meter, OverLimitRecorder.NOOP, MatchTracing.NONE);
  }

  /**
   * Assembles the adapter as {@link #start(EnvoySettings, RateLimitService, Clock, EnvoyMetrics,
   * InputLimits, CheckMeter)} does, reporting every descriptor answered over its limit to {@code
   * overLimit} and tracing the config match of each call to {@link #grpcService} and {@link
   * #jsonHandler} with {@code tracing}.
   *
   * @throws DescriptorConfigException if the files hold an invalid config, or none with a domain
   * @throws dev.weir.core.config.ConfigException if the xDS client's TLS files cannot be read or used
   */
  public static EnvoyAdapter start(
      EnvoySettings settings,
      RateLimitService service,
      Clock clock,
      EnvoyMetrics metrics,
      InputLimits limits,
      CheckMeter meter,
      OverLimitRecorder overLimit,
      MatchTracing tracing)
      throws DescriptorConfigException {
    Answering answering = new Answering(service, clock, limits, meter, overLimit, tracing);
    if (settings.source() == EnvoySettings.Source.FILE) {
      return startFiles(settings.config().orElseThrow(), settings, metrics, answering);
    }
    ConfigHolder holder = new ConfigHolder();
    XdsConfigClient client =
        new XdsConfigClient(
            settings.xds(),
            XdsChannels.factory(settings.xds()),
            new ConfigLoader(settings.loadOptions()),
            holder,
            metrics,
            clock,
            () -> ThreadLocalRandom.current().nextDouble());
    return new EnvoyAdapter(
        settings,
        holder,
        null,
        client,
        metrics,
        answering);
  }

  /**
   * What the adapter's handler answers through: the core service, its clock, limits, meter,
   * over-limit recorder and config-match tracing.
   */
  private record Answering(
      RateLimitService service,
      Clock clock,
      InputLimits limits,
      CheckMeter meter,
      OverLimitRecorder overLimit,
      MatchTracing tracing) {}

  private static EnvoyAdapter startFiles(
      Path configPath, EnvoySettings settings, EnvoyMetrics metrics, Answering answering)
      throws DescriptorConfigException {
    ConfigHolder holder = new ConfigHolder();
    ConfigReloader reloader =
        new ConfigReloader(
            configPath,
            settings.variables(),
            new ConfigLoader(settings.loadOptions()),
            holder,
            metrics);
    boolean present = true;
    if (settings.forceStartWithoutInitialConfig()) {
      present = reloader.loadInitialUnlessMissing();
    } else {
      reloader.loadInitial();
    }
    if (!hasDomains(holder)) {
      if (!settings.forceStartWithoutInitialConfig()) {
        throw NoDomainLoaded.at(
            configPath, settings.loadOptions().keyPrefix(), settings.variables());
      }
      LOG.warn(
          "Starting without a rate limit domain ({}=true): {} {}; not ready until a reload"
              + " brings one",
          settings.variables().forceStart(),
          configPath,
          present ? "declares none" : "does not exist");
    }
    return new EnvoyAdapter(
        settings,
        holder,
        reloader,
        null,
        metrics,
        answering);
  }

  /**
   * Returns a new {@code RateLimitQuotaService} (RLQS) of the node advertised as {@code node},
   * answering from this adapter's descriptor config through {@code reports} (the cluster's quota
   * path), applying {@code limits} to buckets, counting refused buckets with the adapter's {@link
   * CheckMeter} (as {@code ShouldRateLimit} counts refused descriptors) and the rest in {@code
   * registry} and reports of unknown domains in the adapter's {@code domain_not_found} meter,
   * assigning {@code ALLOW_ALL} to every limited bucket under {@code WEIR_ENVOY_SHADOW_MODE},
   * re-planning its streams after every config change (files or xDS); add it to the gRPC server
   * and register it as the receiver of the shares owners push.
   */
  public RlqsService rlqs(
      QuotaReports reports,
      String node,
      RlqsSettings rlqsSettings,
      InputLimits limits,
      Clock clock,
      MeterRegistry registry) {
    RlqsService service =
        new RlqsService(
            holder,
            reports,
            node,
            rlqsSettings.withShadowMode(rlqsSettings.shadowMode() || settings.shadowMode()),
            limits,
            clock,
            new RlqsMetrics(registry),
            meter,
            new UnknownDomains(metrics, clock));
    holder.onChange(service::configChanged);
    return service;
  }

  /**
   * Returns whether a config declaring at least one domain is loaded: false until the first one
   * loads (after a start without one, or before the xDS server's first answer), and while the xDS
   * server serves none.
   */
  public boolean hasDomains() {
    return hasDomains(holder);
  }

  /** Returns the domains the loaded config declares, sorted; none before a config loads. */
  public List<String> domains() {
    return holder
        .current()
        .map(config -> config.domains().keySet().stream().sorted().toList())
        .orElse(List.of());
  }

  private static boolean hasDomains(ConfigHolder holder) {
    return holder.current().map(config -> !config.domains().isEmpty()).orElse(false);
  }

  /**
   * Returns a {@code RateLimitService} of its own that answers from this adapter's config through
   * {@code service}, counting in {@code metrics} and {@code meter}: what a start-up warm-up calls,
   * so that its decisions reach neither the node's counters nor its meters.
   */
  public BindableService warmUpService(
      RateLimitService service,
      Clock clock,
      EnvoyMetrics metrics,
      InputLimits limits,
      CheckMeter meter) {
    return new EnvoyRateLimitGrpcService(
        new ShouldRateLimitHandler(holder, service, clock, settings, metrics, limits, meter));
  }

  /** Returns the config requests are answered with, empty before one loaded. */
  public Optional<EnvoyConfig> config() {
    return holder.current();
  }

  /**
   * Starts keeping the config fresh on {@code executor}: the files are checked every {@code
   * WEIR_ENVOY_CONFIG_RELOAD_INTERVAL}; the xDS stream is opened, and reopened after failures.
   */
  public void watch(ScheduledExecutorService executor) {
    watch(
        (task, delay) -> {
          ScheduledFuture<?> future =
              executor.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
          return () -> future.cancel(false);
        });
  }

  /** Starts keeping the config fresh on {@code scheduler}, see {@link #watch(ScheduledExecutorService)}. */
  public void watch(Scheduler scheduler) {
    if (reloader != null) {
      reloader.start(scheduler, settings.reloadInterval());
    } else {
      xds.start(scheduler);
    }
  }

  /** Returns the file reloader, to trigger a check explicitly; null with the xDS source. */
  public ConfigReloader reloader() {
    return reloader;
  }

  /** Returns the xDS client; null with the file source. */
  public XdsConfigClient xdsClient() {
    return xds;
  }

  /** Returns the adapter's meters. */
  public EnvoyMetrics metrics() {
    return metrics;
  }

  /** Returns {@code envoy.service.ratelimit.v3.RateLimitService}, to add to the gRPC server. */
  public BindableService grpcService() {
    return grpcService;
  }

  /** Returns the {@code POST /json} handler, to mount on the HTTP listener. */
  public HttpHandler jsonHandler() {
    return jsonHandler;
  }

  /** Returns the adapter's HTTP routes: {@code POST /json}. */
  public List<HttpRoute> httpRoutes() {
    return List.of(HttpRoute.post("/json", jsonHandler));
  }

  /** Stops watching the files, or closes the xDS stream and channel. */
  @Override
  public void close() {
    if (reloader != null) {
      reloader.close();
    }
    if (xds != null) {
      xds.close();
    }
  }
}
