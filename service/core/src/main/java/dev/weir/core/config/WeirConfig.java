package dev.weir.core.config;

import java.util.List;
import java.util.Optional;

/**
 * The settings of one node, read once at start-up. Other areas (cluster, discovery, Envoy) read
 * their own records from the same {@link EnvReader}.
 *
 * @param grpcAddress where the gRPC listener binds ({@code WEIR_GRPC_ADDRESS})
 * @param httpAddress where the HTTP listener binds ({@code WEIR_HTTP_ADDRESS})
 * @param advertiseAddress the gRPC address peers and clients reach this node at; port 0 means the
 *     port the gRPC listener is bound to ({@code WEIR_ADVERTISE_ADDRESS}; a wildcard host is
 *     replaced by {@code WEIR_K8S_POD_IP}, else by this host's address)
 * @param cacheSize the most buckets kept in memory ({@code WEIR_CACHE_SIZE})
 * @param logLevel the root log level: trace, debug, info, warn or error ({@code WEIR_LOG_LEVEL})
 */
public record WeirConfig(
    HostPort grpcAddress,
    HostPort httpAddress,
    HostPort advertiseAddress,
    int cacheSize,
    String logLevel) {

  /** {@code WEIR_GRPC_ADDRESS}, alias {@code GUBER_GRPC_ADDRESS}. */
  public static final EnvVar GRPC_ADDRESS = EnvVar.of("WEIR_GRPC_ADDRESS", "GUBER_GRPC_ADDRESS");

  /** {@code WEIR_HTTP_ADDRESS}, alias {@code GUBER_HTTP_ADDRESS}. */
  public static final EnvVar HTTP_ADDRESS = EnvVar.of("WEIR_HTTP_ADDRESS", "GUBER_HTTP_ADDRESS");

  /** {@code WEIR_ADVERTISE_ADDRESS}, alias {@code GUBER_ADVERTISE_ADDRESS}. */
  public static final EnvVar ADVERTISE_ADDRESS =
      EnvVar.of("WEIR_ADVERTISE_ADDRESS", "GUBER_ADVERTISE_ADDRESS");

  /**
   * {@code WEIR_K8S_POD_IP}, alias {@code GUBER_K8S_POD_IP}: this pod's IP (downward API {@code
   * status.podIP}), advertised in place of a wildcard host in every discovery mode.
   */
  public static final EnvVar POD_IP = EnvVar.of("WEIR_K8S_POD_IP", "GUBER_K8S_POD_IP");

  /** {@code WEIR_CACHE_SIZE}, alias {@code GUBER_CACHE_SIZE}. */
  public static final EnvVar CACHE_SIZE = EnvVar.of("WEIR_CACHE_SIZE", "GUBER_CACHE_SIZE");

  /** {@code WEIR_LOG_LEVEL}, alias {@code GUBER_LOG_LEVEL}. */
  public static final EnvVar LOG_LEVEL = EnvVar.of("WEIR_LOG_LEVEL", "GUBER_LOG_LEVEL");

  /** Gubernator's default gRPC address. */
  public static final HostPort DEFAULT_GRPC_ADDRESS = new HostPort("localhost", 1051);

  /** Gubernator's default HTTP address. */
  public static final HostPort DEFAULT_HTTP_ADDRESS = new HostPort("localhost", 1050);

  /** Gubernator's default cache size. */
  public static final int DEFAULT_CACHE_SIZE = 50_000;

  private static final List<String> LOG_LEVELS =
      List.of("trace", "debug", "info", "warn", "warning", "error", "fatal", "panic");

  /**
   * Reads the node's settings from {@code env}. When the advertise address (given, or defaulted to
   * the gRPC address) has a wildcard host ({@code 0.0.0.0}, {@code ::} or empty), the host is
   * replaced by the pod IP {@code WEIR_K8S_POD_IP} when set (in its RFC 5952 text when IPv6, so the
   * address reads {@code [fd00::5]:1051}), else by {@code hostAddress}, as Gubernator does.
   *
   * @throws ConfigException naming {@code WEIR_K8S_POD_IP} when it is used and no IP literal
   */
  public static WeirConfig from(EnvReader env, HostAddressResolver hostAddress) {
    HostPort grpc = env.hostPort(GRPC_ADDRESS, DEFAULT_GRPC_ADDRESS);
    HostPort http = env.hostPort(HTTP_ADDRESS, DEFAULT_HTTP_ADDRESS);
    HostPort advertise = env.hostPort(ADVERTISE_ADDRESS, grpc);
    if (advertise.isWildcard()) {
      advertise = advertise.withHost(podIp(env).orElseGet(hostAddress::resolve));
    }
    int cacheSize = env.intInRange(CACHE_SIZE, DEFAULT_CACHE_SIZE, 1, Integer.MAX_VALUE);
    String level = normalizeLevel(env.oneOf(LOG_LEVEL, "info", LOG_LEVELS));
    return new WeirConfig(grpc, http, advertise, cacheSize, level);
  }

  /**
   * Checks that a gRPC channel can be opened to the advertise address, which a node that may have
   * peers publishes for them to call ({@link HostPort#requireGrpcHost}; its port may be 0, the
   * bound port).
   *
   * @throws ConfigException naming {@code WEIR_ADVERTISE_ADDRESS} as set or, when unset, the
   *     {@code WEIR_GRPC_ADDRESS} it defaults to, the value and what is allowed
   */
  public void checkPeersCanCall(EnvReader env) {
    try {
      advertiseAddress.requireGrpcHost();
    } catch (IllegalArgumentException e) {
      Optional<EnvReader.Setting> advertise = env.lookup(ADVERTISE_ADDRESS);
      EnvReader.Setting setting =
          advertise
              .or(() -> env.lookup(GRPC_ADDRESS))
              .orElse(new EnvReader.Setting(ADVERTISE_ADDRESS.name(), advertiseAddress.toString()));
      throw ConfigException.invalid(
          setting.variable(),
          setting.value(),
          "host:port that peers can call, e.g. 10.0.0.5:1051 or [fd00::5]:1051 ("
              + (advertise.isEmpty() ? ADVERTISE_ADDRESS.name() + " is unset, so peers call it; " : "")
              + e.getMessage()
              + ")");
    }
  }

  // The pod IP as peers spell it; anything but an IP literal (an unresolved $(POD_IP) included) is
  // refused, as the node would advertise an address no peer can reach.
  private static Optional<String> podIp(EnvReader env) {
    return env.lookup(POD_IP)
        .map(
            setting ->
                IpText.canonical(setting.value())
                    .orElseThrow(
                        () ->
                            ConfigException.invalid(
                                setting.variable(), setting.value(), IpText.POD_IP_ALLOWED)));
  }

  private static String normalizeLevel(String level) {
    switch (level) {
      case "warning":
        return "warn";
      case "fatal":
      case "panic":
        return "error";
      default:
        return level;
    }
  }

  /** Returns the settings as one line of {@code key=value} pairs, for the start-up log. */
  public String describe() {
    return "grpc_address="
        + grpcAddress
        + " http_address="
        + httpAddress
        + " advertise_address="
        + advertiseAddress
        + " cache_size="
        + cacheSize
        + " log_level="
        + logLevel;
  }
}
