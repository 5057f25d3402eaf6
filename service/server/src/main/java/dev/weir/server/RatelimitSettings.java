package dev.weir.server;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.IpText;
import dev.weir.core.config.WeirConfig;
import dev.weir.envoy.EnvoySettings;
import dev.weir.tls.ClientAuth;
import dev.weir.tls.TlsSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * What envoyproxy/ratelimit's environment variables ask of a node in the compatibility mode, with
 * the reference's meanings and defaults: the listeners ({@code HOST}/{@code PORT} 0.0.0.0:8080,
 * {@code GRPC_HOST}/{@code GRPC_PORT} 0.0.0.0:8081, {@code DEBUG_HOST}/{@code DEBUG_PORT}
 * 0.0.0.0:6070), TLS of the gRPC listener, logging ({@code LOG_LEVEL} warn), the config source and
 * behaviour (see {@link ReferenceEnvironment#ENVOY}), health and stats.
 *
 * @param grpcAddress the gRPC listener
 * @param httpAddress the HTTP listener ({@code /healthcheck}, {@code /json})
 * @param debugAddress the debug listener ({@code /rlconfig})
 * @param logLevel the root log level
 * @param logFormat the log line format
 * @param grpcTls TLS of the gRPC listener alone ({@link TlsSettings#DISABLED} when off)
 * @param maxConnectionAge how long a client connection lives before the server closes it
 * @param maxConnectionAgeGrace how long its calls then have to finish
 * @param envoy the Envoy adapter's settings, source included
 * @param healthyOnlyWithConfig whether the node reports unhealthy while no domain is loaded
 * @param statsd where the reference's stats are sent, empty when off
 * @param prometheus where Weir's meters are served for Prometheus, empty when off
 * @param tracing whether and how traces are exported ({@code TRACING_*}, {@code OTEL_*})
 */
record RatelimitSettings(
    HostPort grpcAddress,
    HostPort httpAddress,
    HostPort debugAddress,
    String logLevel,
    LogSetup.Format logFormat,
    TlsSettings grpcTls,
    Duration maxConnectionAge,
    Duration maxConnectionAgeGrace,
    EnvoySettings envoy,
    boolean healthyOnlyWithConfig,
    Optional<Statsd> statsd,
    Optional<Prometheus> prometheus,
    TracingSettings tracing) {

  /** Where and how often the reference's stats go over StatsD. */
  record Statsd(String host, int port, Duration flushInterval, Map<String, String> extraTags) {}

  /** Where Weir's meters are served for Prometheus: {@code address} and {@code path}. */
  record Prometheus(HostPort address, String path) {}

  /** The reference's {@code GRPC_HOST}/{@code GRPC_PORT}, named in bind failures. */
  static final EnvVar GRPC_ADDRESS = EnvVar.of("GRPC_HOST/GRPC_PORT");

  /** The reference's {@code HOST}/{@code PORT}, named in bind failures. */
  static final EnvVar HTTP_ADDRESS = EnvVar.of("HOST/PORT");

  /** The reference's {@code DEBUG_HOST}/{@code DEBUG_PORT}, named in bind failures. */
  static final EnvVar DEBUG_ADDRESS = EnvVar.of("DEBUG_HOST/DEBUG_PORT");

  /** The reference's {@code LOG_LEVEL}, the node's log level in this mode. */
  static final EnvVar LOG_LEVEL = EnvVar.of("LOG_LEVEL");

  /** The reference's {@code PROMETHEUS_ADDR}. */
  static final EnvVar PROMETHEUS_ADDRESS = EnvVar.of("PROMETHEUS_ADDR");

  /**
   * The node's address variables that {@link #nodeEnvironment} sets, each with the reference's
   * variables it is made from.
   */
  static final Map<EnvVar, EnvVar> NODE_ADDRESSES =
      Map.of(WeirConfig.GRPC_ADDRESS, GRPC_ADDRESS, WeirConfig.HTTP_ADDRESS, HTTP_ADDRESS);

  /**
   * The reference's variables the {@code FILE} source's path is made from without {@code
   * RUNTIME_WATCH_ROOT}.
   */
  static final String RUNTIME_PATH_VARIABLES =
      "RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY";

  /**
   * The reference's variables the {@code FILE} source's path is made from with {@code
   * RUNTIME_WATCH_ROOT}, which reads the files whose key starts with {@code RUNTIME_APPDIRECTORY.}
   * below it.
   */
  static final String RUNTIME_ROOT_VARIABLES = "RUNTIME_ROOT/RUNTIME_SUBDIRECTORY";

  private static final List<String> LOG_LEVELS =
      List.of("trace", "debug", "info", "warn", "warning", "error", "fatal", "panic");

  /**
   * Reads the settings from {@code env}; a bad value throws {@link ConfigException} naming the
   * variable as set, the value and what is allowed.
   */
  static RatelimitSettings from(Map<String, String> env) {
    EnvReader reader = new EnvReader(env);
    HostPort grpc = address(reader, "GRPC_HOST", "GRPC_PORT", 8081);
    HostPort http = address(reader, "HOST", "PORT", 8080);
    HostPort debug = address(reader, "DEBUG_HOST", "DEBUG_PORT", 6070);
    String level = reader.oneOf(LOG_LEVEL, "warn", LOG_LEVELS);
    LogSetup.Format format =
        LogSetup.Format.valueOf(
            reader
                .oneOf(EnvVar.of("LOG_FORMAT"), "text", List.of("text", "json"))
                .toUpperCase(Locale.ROOT));
    EnvoySettings envoy = EnvoySettings.from(reader, ReferenceEnvironment.ENVOY);
    if (envoy.source() == EnvoySettings.Source.FILE) {
      envoy = runtimeFiles(reader, envoy);
    }
    boolean statsOff = reader.bool(EnvVar.of("DISABLE_STATS"), false);
    Optional<Statsd> statsd = Optional.empty();
    if (!statsOff && reader.bool(EnvVar.of("USE_STATSD"), true)) {
      statsd =
          Optional.of(
              new Statsd(
                  reader.string(EnvVar.of("STATSD_HOST"), "localhost"),
                  reader.intInRange(EnvVar.of("STATSD_PORT"), 8125, 1, 65_535),
                  reader.duration(
                      EnvVar.of("STATS_FLUSH_INTERVAL"),
                      Duration.ofSeconds(10),
                      Duration.ofMillis(10),
                      Duration.ofHours(1)),
                  extraTags(reader)));
    }
    Optional<Prometheus> prometheus = Optional.empty();
    if (!statsOff && reader.bool(EnvVar.of("USE_PROMETHEUS"), false)) {
      prometheus =
          Optional.of(
              new Prometheus(
                  reader.hostPort(PROMETHEUS_ADDRESS, new HostPort("", 9090)),
                  path(reader, EnvVar.of("PROMETHEUS_PATH"), "/metrics")));
    }
    return new RatelimitSettings(
        grpc,
        http,
        debug,
        switch (level) {
          case "warning" -> "warn";
          case "fatal", "panic" -> "error";
          default -> level;
        },
        format,
        grpcTls(reader),
        reader.duration(
            EnvVar.of("GRPC_MAX_CONNECTION_AGE"),
            Duration.ofHours(24),
            Duration.ofSeconds(1),
            Duration.ofDays(3650)),
        reader.duration(
            EnvVar.of("GRPC_MAX_CONNECTION_AGE_GRACE"),
            Duration.ofHours(1),
            Duration.ZERO,
            Duration.ofDays(3650)),
        envoy,
        reader.bool(EnvVar.of("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED"), false),
        statsd,
        prometheus,
        TracingSettings.fromReference(env));
  }

  /**
   * Returns the environment with the node's own addresses and log level set from the reference's
   * variables, for the {@code WEIR_*} settings that the compatibility mode still reads.
   */
  Map<String, String> nodeEnvironment(Map<String, String> env) {
    Map<String, String> out = new HashMap<>(env);
    out.put("WEIR_GRPC_ADDRESS", grpcAddress.toString());
    out.put("WEIR_HTTP_ADDRESS", httpAddress.toString());
    out.put("WEIR_LOG_LEVEL", logLevel);
    out.remove("GUBER_GRPC_ADDRESS");
    out.remove("GUBER_HTTP_ADDRESS");
    out.remove("GUBER_LOG_LEVEL");
    return out;
  }

  /**
   * Returns {@code envoy} with the {@code FILE} source reading what the reference's runtime loader
   * reads: with {@code RUNTIME_WATCH_ROOT} (the default) every file below {@code
   * RUNTIME_ROOT/SUBDIRECTORY} whose key (its path below it, {@code /} read as {@code .}) starts
   * with {@code APPDIRECTORY.}, such as {@code config.yaml} or {@code config/a.yaml}; without it,
   * every file below {@code RUNTIME_ROOT/SUBDIRECTORY/APPDIRECTORY}.
   */
  private static EnvoySettings runtimeFiles(EnvReader reader, EnvoySettings envoy) {
    Path subdirectory =
        Path.of(
            reader.string(EnvVar.of("RUNTIME_ROOT"), "/srv/runtime_data/current"),
            reader.string(EnvVar.of("RUNTIME_SUBDIRECTORY"), ""));
    String appDirectory = reader.string(EnvVar.of("RUNTIME_APPDIRECTORY"), "config");
    if (reader.bool(EnvVar.of("RUNTIME_WATCH_ROOT"), true)) {
      return envoy.withConfig(
          subdirectory,
          RUNTIME_ROOT_VARIABLES,
          appDirectory + ".",
          "the prefix is RUNTIME_APPDIRECTORY='"
              + appDirectory
              + "' and a '.', and RUNTIME_WATCH_ROOT=false reads every file in "
              + RUNTIME_PATH_VARIABLES
              + " instead");
    }
    return envoy.withConfig(subdirectory.resolve(appDirectory), RUNTIME_PATH_VARIABLES);
  }

  private static HostPort address(EnvReader reader, String hostVar, String portVar, int port) {
    return new HostPort(
        host(reader, hostVar), reader.intInRange(EnvVar.of(portVar), port, 0, 65_535));
  }

  /**
   * Returns the listener host {@code hostVar} names (default {@code 0.0.0.0}): a host name or IPv4
   * address of letters, digits, {@code .}, {@code -} and {@code _}, or an IPv6 address with or
   * without brackets (returned without), with or without a zone ({@code %} and letters, digits,
   * {@code .}, {@code -} and {@code _}, e.g. {@code fe80::1%eth0}).
   */
  private static String host(EnvReader reader, String hostVar) {
    String value = reader.string(EnvVar.of(hostVar), "0.0.0.0");
    String host = value.trim();
    String unbracketed =
        host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    if (isIpv6WithZone(unbracketed) || IpText.literal(host).isPresent()) {
      return unbracketed;
    }
    if (!host.chars().allMatch(c -> HostPort.isHostNameChar((char) c))) {
      throw ConfigException.invalid(
          hostVar,
          value,
          "a host name or IPv4 address of letters, digits, '.', '-' and '_', or an IPv6 address"
              + " with or without a zone, e.g. 0.0.0.0, :: or fe80::1%eth0");
    }
    return host;
  }

  /**
   * Returns whether {@code text} is an IPv6 literal with a zone: the address, {@code %}, and a
   * zone of letters, digits, {@code .}, {@code -} and {@code _}.
   */
  private static boolean isIpv6WithZone(String text) {
    int percent = text.indexOf('%');
    if (percent < 0 || percent == text.length() - 1) {
      return false;
    }
    String address = text.substring(0, percent);
    String zone = text.substring(percent + 1);
    return address.indexOf(':') >= 0
        && IpText.literal(address).isPresent()
        && zone.chars().allMatch(c -> HostPort.isHostNameChar((char) c));
  }

  /**
   * Returns TLS of the gRPC listener: {@code GRPC_SERVER_USE_TLS} with {@code GRPC_SERVER_TLS_CERT}
   * and {@code _KEY}; client certificates are required, and must chain to it, when a CA is given
   * ({@code GRPC_SERVER_TLS_CA_CERT}, as Envoy Gateway names it, or {@code GRPC_CLIENT_TLS_CACERT},
   * as the reference's settings name it).
   */
  private static TlsSettings grpcTls(EnvReader reader) {
    if (!reader.bool(EnvVar.of("GRPC_SERVER_USE_TLS"), false)) {
      return TlsSettings.DISABLED;
    }
    Optional<Path> cert = reader.path(EnvVar.of("GRPC_SERVER_TLS_CERT"));
    Optional<Path> key = reader.path(EnvVar.of("GRPC_SERVER_TLS_KEY"));
    if (cert.isEmpty() || key.isEmpty()) {
      throw new ConfigException(
          "GRPC_SERVER_USE_TLS=true needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY: "
              + (cert.isEmpty() ? "GRPC_SERVER_TLS_CERT" : "GRPC_SERVER_TLS_KEY")
              + " is not set");
    }
    Optional<Path> ca = reader.path(EnvVar.of("GRPC_SERVER_TLS_CA_CERT", "GRPC_CLIENT_TLS_CACERT"));
    return new TlsSettings(
        cert,
        key,
        ca,
        ca.isPresent() ? ClientAuth.REQUIRE_AND_VERIFY : ClientAuth.NONE,
        "TLSv1.2",
        false,
        TlsSettings.DISABLED.reloadInterval());
  }

  /** Returns {@code EXTRA_TAGS}: {@code key:value} pairs separated by commas. */
  private static Map<String, String> extraTags(EnvReader reader) {
    Optional<EnvReader.Setting> setting = reader.lookup(EnvVar.of("EXTRA_TAGS"));
    Map<String, String> tags = new LinkedHashMap<>();
    if (setting.isEmpty()) {
      return tags;
    }
    for (String pair : setting.get().value().split(",")) {
      int colon = pair.indexOf(':');
      if (colon <= 0) {
        throw ConfigException.invalid(
            "EXTRA_TAGS",
            setting.get().value(),
            "key:value pairs separated by commas, e.g. env:prod,zone:a");
      }
      tags.put(pair.substring(0, colon).trim(), pair.substring(colon + 1).trim());
    }
    return tags;
  }

  private static String path(EnvReader reader, EnvVar var, String fallback) {
    String path = reader.string(var, fallback);
    if (!path.startsWith("/")) {
      throw ConfigException.invalid(var.name(), path, "a path starting with '/'");
    }
    return path;
  }
}
