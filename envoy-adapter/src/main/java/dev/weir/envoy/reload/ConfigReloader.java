package dev.weir.envoy.reload;

import dev.weir.envoy.config.ConfigException;
import dev.weir.envoy.config.ConfigFile;
import dev.weir.envoy.config.ConfigFiles;
import dev.weir.envoy.config.ConfigHolder;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.metrics.EnvoyMetrics;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
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
 * interval. A reload is all-or-nothing: a config that fails to load leaves the last good one in
 * place, is logged at WARN and counted, and is not retried until the content changes again.
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

  private final Path path;
  private final ConfigLoader loader;
  private final ConfigHolder holder;
  private final EnvoyMetrics metrics;
  private final List<Runnable> reloadListeners = new CopyOnWriteArrayList<>();
  private String lastFingerprint = "";
  private ScheduledFuture<?> task;

  /** Creates a reloader of {@code path} into {@code holder}. */
  public ConfigReloader(Path path, ConfigLoader loader, ConfigHolder holder, EnvoyMetrics metrics) {
    this.path = path;
    this.loader = loader;
    this.holder = holder;
    this.metrics = metrics;
  }

  /** Loads the configuration for start-up; an invalid one throws, and the caller should stop. */
  public synchronized void loadInitial() throws ConfigException {
    List<ConfigFile> files;
    try {
      files = ConfigFiles.read(path);
      holder.set(loader.compile(files));
    } catch (ConfigException e) {
      metrics.configLoadError();
      throw e;
    }
    lastFingerprint = fingerprint(files);
    metrics.configLoadSuccess();
  }

  /** Reloads the configuration if the content at the path changed since the last check. */
  public synchronized Outcome reloadIfChanged() {
    List<ConfigFile> files;
    try {
      files = ConfigFiles.read(path);
    } catch (ConfigException e) {
      return failed("unreadable:" + e.getMessage(), e);
    }
    String fingerprint = fingerprint(files);
    if (fingerprint.equals(lastFingerprint)) {
      return Outcome.UNCHANGED;
    }
    try {
      holder.set(loader.compile(files));
    } catch (ConfigException e) {
      return failed(fingerprint, e);
    }
    lastFingerprint = fingerprint;
    metrics.configLoadSuccess();
    LOG.info("Loaded new rate limit configuration from {}", path);
    for (Runnable listener : reloadListeners) {
      try {
        listener.run();
      } catch (RuntimeException e) {
        LOG.warn("A listener of configuration reloads failed", e);
      }
    }
    return Outcome.RELOADED;
  }

  private Outcome failed(String fingerprint, ConfigException e) {
    if (fingerprint.equals(lastFingerprint)) {
      return Outcome.UNCHANGED;
    }
    lastFingerprint = fingerprint;
    metrics.configLoadError();
    LOG.warn("Error loading new configuration, keeping the last good one: {}", e.getMessage());
    return Outcome.FAILED;
  }

  /** Runs {@code listener} after each reload that put a new configuration in use. */
  public void onReload(Runnable listener) {
    reloadListeners.add(listener);
  }

  /** Checks for changes every {@code interval} on {@code scheduler} until {@link #close()}. */
  public synchronized void start(ScheduledExecutorService scheduler, Duration interval) {
    if (task != null) {
      throw new IllegalStateException("already started");
    }
    long nanos = interval.toNanos();
    task = scheduler.scheduleWithFixedDelay(this::checkQuietly, nanos, nanos, TimeUnit.NANOSECONDS);
  }

  private void checkQuietly() {
    try {
      reloadIfChanged();
    } catch (RuntimeException e) {
      LOG.warn("Checking {} for configuration changes failed", path, e);
    }
  }

  /** Stops checking. */
  @Override
  public synchronized void close() {
    if (task != null) {
      task.cancel(false);
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
        digest.update(java.nio.ByteBuffer.allocate(4).putInt(bytes.length).array());
        digest.update(bytes);
      }
    }
    return HexFormat.of().formatHex(digest.digest());
  }
}
