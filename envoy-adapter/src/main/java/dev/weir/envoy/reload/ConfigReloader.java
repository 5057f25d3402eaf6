package dev.weir.envoy.reload;

import dev.weir.core.time.Scheduler;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DescriptorConfigException;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.config.NoDomainLoaded;
import dev.weir.envoy.metrics.EnvoyMetrics;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a {@link ConfigHolder} in step with the descriptor file or directory at a path.
 *
 * <p>Design: the path is polled, not watched. Each check reads every file and compares a SHA-256
 * fingerprint of their names and contents with the last one seen; only a change triggers a compile.
 * A WatchService misses changes behind symbolic links (a single-file mount whose link target
 * changes, or a directory given through a link), and a Kubernetes ConfigMap update is a rename of
 * the {@code ..data} link that some platforms' watchers report late or not at all; reading the
 * content sees every one of those the same way, at the cost of reading a few small files per
 * interval.
 *
 * <p>A reload is all-or-nothing: content that fails to load in any way (a load error, a config
 * without a domain, or an {@link Error} such as {@link StackOverflowError} thrown while parsing)
 * leaves the last good configuration in place, is logged at WARN and counted in {@code
 * config_load_error}. Content refused with an exception is not retried until it changes again;
 * content that failed through an {@link Error}, which may come from the moment (an {@link
 * OutOfMemoryError}) rather than the content, is retried once at the next check (logged and
 * counted once), and not again until it changes if that check fails through an {@link Error} too.
 * No failure stops later checks.
 */
public final class ConfigReloader implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(ConfigReloader.class);

  /** The result of one check. */
  public enum Outcome {
    /** The content is what was last seen; nothing was done. */
    UNCHANGED,
    /** A new configuration was loaded and is in use. */
    RELOADED,
    /** The new content did not load; the last good configuration stays in use. */
    FAILED
  }

  /** Compiles files read at the path; a seam for tests that make compiling throw. */
  @FunctionalInterface
  interface Compiler {
    EnvoyConfig compile(List<ConfigFile> files) throws DescriptorConfigException;
  }

  private final Path path;
  private final NoDomainLoaded.Variables variables;
  private final ConfigLoader loader;
  private final Compiler compiler;
  private final ConfigHolder holder;
  private final EnvoyMetrics metrics;
  private String lastFingerprint = "";

  /**
   * The fingerprint of the content whose compile threw an {@link Error} for the first time at the
   * last check, to be retried once.
   */
  private String erroredFingerprint = "";
  private Scheduler scheduler;
  private Duration interval;
  private Scheduler.Task task;
  private boolean closed;

  /** Creates a reloader of {@code path} into {@code holder}. */
  public ConfigReloader(Path path, ConfigLoader loader, ConfigHolder holder, EnvoyMetrics metrics) {
    this(path, NoDomainLoaded.Variables.WEIR, loader, holder, metrics);
  }

  /**
   * Creates a reloader of {@code path} into {@code holder} whose refusal of a config without a
   * domain names {@code variables}.
   */
  public ConfigReloader(
      Path path,
      NoDomainLoaded.Variables variables,
      ConfigLoader loader,
      ConfigHolder holder,
      EnvoyMetrics metrics) {
    this(
        path,
        variables,
        loader,
        files -> loader.compile(files, ConfigReloader::warn),
        holder,
        metrics);
  }

  private static void warn(String warning) {
    LOG.warn("Rate limit configuration loads with a warning: {}", warning);
  }

  ConfigReloader(
      Path path,
      ConfigLoader loader,
      Compiler compiler,
      ConfigHolder holder,
      EnvoyMetrics metrics) {
    this(path, NoDomainLoaded.Variables.WEIR, loader, compiler, holder, metrics);
  }

  private ConfigReloader(
      Path path,
      NoDomainLoaded.Variables variables,
      ConfigLoader loader,
      Compiler compiler,
      ConfigHolder holder,
      EnvoyMetrics metrics) {
    this.path = path;
    this.variables = variables;
    this.loader = loader;
    this.compiler = compiler;
    this.holder = holder;
    this.metrics = metrics;
  }

  /**
   * Loads the configuration for start-up; an invalid one throws, and the caller should stop. A
   * config without a domain loads (the caller decides whether to start with it).
   */
  public synchronized void loadInitial() throws DescriptorConfigException {
    List<ConfigFile> files;
    try {
      files = loader.read(path);
      holder.set(compiler.compile(files));
    } catch (DescriptorConfigException e) {
      metrics.configLoadError();
      throw e;
    }
    lastFingerprint = fingerprint(files);
    metrics.configLoadSuccess();
  }

  /**
   * Loads the configuration for start-up as {@link #loadInitial()} does, unless the path does not
   * exist: then the configuration of no files (no domain, so every call is answered as one of an
   * unknown domain) is held, nothing is counted, and later checks load the files once the path
   * appears; returns whether the path existed.
   */
  public synchronized boolean loadInitialUnlessMissing() throws DescriptorConfigException {
    if (!Files.exists(path)) {
      try {
        loader.read(path);
      } catch (DescriptorConfigException missing) {
        holder.set(compiler.compile(List.of()));
        lastFingerprint = "unreadable:" + missing.getMessage();
        return false;
      }
    }
    loadInitial();
    return true;
  }

  /** Reloads the configuration if the content at the path changed since the last check. */
  public synchronized Outcome reloadIfChanged() {
    String fingerprint = "";
    String erroredBefore = erroredFingerprint;
    erroredFingerprint = "";
    try {
      List<ConfigFile> files = loader.read(path);
      fingerprint = fingerprint(files);
      if (fingerprint.equals(lastFingerprint)) {
        return Outcome.UNCHANGED;
      }
      EnvoyConfig config = compiler.compile(files);
      if (config.domains().isEmpty()) {
        throw NoDomainLoaded.at(path, loader.options().keyPrefix(), variables);
      }
      holder.set(config);
    } catch (DescriptorConfigException e) {
      return failed(fingerprint.isEmpty() ? "unreadable:" + e.getMessage() : fingerprint, e);
    } catch (Error e) {
      String errored = fingerprint.isEmpty() ? "thrown:" + e : fingerprint;
      if (errored.equals(erroredBefore)) {
        // The second Error in a row for this content comes from the content: not retried again.
        lastFingerprint = errored;
      } else {
        erroredFingerprint = errored;
        reportFailure(e);
      }
      return Outcome.FAILED;
    } catch (Throwable e) {
      return failed(fingerprint.isEmpty() ? "thrown:" + e : fingerprint, e);
    }
    lastFingerprint = fingerprint;
    metrics.configLoadSuccess();
    LOG.info("Loaded new rate limit configuration from {}", path);
    return Outcome.RELOADED;
  }

  private Outcome failed(String fingerprint, Throwable e) {
    if (fingerprint.equals(lastFingerprint)) {
      return Outcome.UNCHANGED;
    }
    lastFingerprint = fingerprint;
    reportFailure(e);
    return Outcome.FAILED;
  }

  private void reportFailure(Throwable e) {
    metrics.configLoadError();
    LOG.warn(
        "Error loading new configuration, keeping the last good one: {}",
        e instanceof DescriptorConfigException ? e.getMessage() : e.toString());
  }

  /** Checks for changes every {@code interval} on {@code scheduler} until {@link #close()}. */
  public synchronized void start(Scheduler scheduler, Duration interval) {
    if (this.scheduler != null) {
      throw new IllegalStateException("already started");
    }
    this.scheduler = scheduler;
    this.interval = interval;
    task = scheduler.schedule(this::check, interval);
  }

  private void check() {
    try {
      reloadIfChanged();
    } finally {
      synchronized (this) {
        if (!closed) {
          task = scheduler.schedule(this::check, interval);
        }
      }
    }
  }

  /** Stops checking. */
  @Override
  public synchronized void close() {
    closed = true;
    if (task != null) {
      task.cancel();
    }
  }

  private static String fingerprint(List<ConfigFile> files) {
    MessageDigest digest;
    try {
      digest = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    for (ConfigFile file : files) {
      for (String part : List.of(file.name(), file.text())) {
        byte[] bytes = part.getBytes(StandardCharsets.UTF_8);
        digest.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
        digest.update(bytes);
      }
    }
    return HexFormat.of().formatHex(digest.digest());
  }
}
