package dev.weir.envoy;

import dev.weir.core.cluster.batch.Scheduler;
import dev.weir.core.http.HttpHandler;
import dev.weir.core.http.HttpRoute;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.metrics.CheckMeter;
import dev.weir.core.time.Clock;
import dev.weir.envoy.config.ConfigException;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.NoDomainLoaded;
import dev.weir.envoy.http.JsonHandler;
import dev.weir.envoy.metrics.EnvoyMetrics;
import dev.weir.envoy.reload.ConfigReloader;
import dev.weir.envoy.service.EnvoyRateLimitGrpcService;
import dev.weir.envoy.service.ShouldRateLimitHandler;
import io.grpc.BindableService;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Envoy adapter assembled for a server: the loaded descriptor config kept fresh by a {@link
 * ConfigReloader}, the {@code ShouldRateLimit} gRPC service and the {@code POST /json} handler, all
 * answering through one core {@link RateLimitService}.
 */
public final class EnvoyAdapter implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(EnvoyAdapter.class);

  private final EnvoySettings settings;
  private final ConfigHolder holder;
  private final ConfigReloader reloader;
  private final EnvoyRateLimitGrpcService grpcService;
  private final JsonHandler jsonHandler;

  private EnvoyAdapter(
      EnvoySettings settings,
      ConfigHolder holder,
      ConfigReloader reloader,
      EnvoyRateLimitGrpcService grpcService,
      JsonHandler jsonHandler) {
    this.settings = settings;
    this.holder = holder;
    this.reloader = reloader;
    this.grpcService = grpcService;
    this.jsonHandler = jsonHandler;
  }

  /**
   * Loads the descriptor config at {@code configPath} and assembles the adapter; an invalid config,
   * or one that declares no domain without {@code
   * WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG=true}, throws, which should stop the server with
   * the errors.
   */
  public static EnvoyAdapter start(
      Path configPath,
      EnvoySettings settings,
      RateLimitService service,
      Clock clock,
      MeterRegistry registry)
      throws ConfigException {
    return start(
        configPath, settings, service, clock, registry, InputLimits.DEFAULTS, CheckMeter.NOOP);
  }

  /**
   * Loads the descriptor config at {@code configPath} and assembles the adapter, applying {@code
   * limits} to descriptors and counting calls with {@code meter}; an invalid config, or one that
   * declares no domain without {@code WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG=true}, throws.
   */
  public static EnvoyAdapter start(
      Path configPath,
      EnvoySettings settings,
      RateLimitService service,
      Clock clock,
      MeterRegistry registry,
      InputLimits limits,
      CheckMeter meter)
      throws ConfigException {
    EnvoyMetrics metrics = new EnvoyMetrics(registry);
    ConfigHolder holder = new ConfigHolder();
    ConfigReloader reloader =
        new ConfigReloader(configPath, new ConfigLoader(settings.loadOptions()), holder, metrics);
    reloader.loadInitial();
    if (!hasDomains(holder)) {
      if (!settings.forceStartWithoutInitialConfig()) {
        throw NoDomainLoaded.at(configPath);
      }
      LOG.warn(
          "Starting without a rate limit domain ({}=true): {} declares none; not ready until a"
              + " reload brings one",
          NoDomainLoaded.FORCE_START,
          configPath);
    }
    ShouldRateLimitHandler handler =
        new ShouldRateLimitHandler(holder, service, clock, settings, metrics, limits, meter);
    return new EnvoyAdapter(
        settings,
        holder,
        reloader,
        new EnvoyRateLimitGrpcService(handler),
        new JsonHandler(handler));
  }

  /**
   * Returns whether a config declaring at least one domain is loaded: false only after a start
   * without one ({@code WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG=true}) until a reload brings
   * a domain. A node is not ready while this is false.
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
   * Starts checking the config path for changes every {@code WEIR_ENVOY_CONFIG_RELOAD_INTERVAL}, on
   * {@code executor}.
   */
  public void watch(ScheduledExecutorService executor) {
    watch(
        (task, delay) -> {
          ScheduledFuture<?> future =
              executor.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
          return () -> future.cancel(false);
        });
  }

  /**
   * Starts checking the config path for changes every {@code WEIR_ENVOY_CONFIG_RELOAD_INTERVAL}, on
   * {@code scheduler}.
   */
  public void watch(Scheduler scheduler) {
    reloader.start(scheduler, settings.reloadInterval());
  }

  /** Returns the reloader, to trigger a check explicitly. */
  public ConfigReloader reloader() {
    return reloader;
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

  /** Stops watching the config path. */
  @Override
  public void close() {
    reloader.close();
  }
}
