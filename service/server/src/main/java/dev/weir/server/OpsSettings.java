package dev.weir.server;

import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.limiter.InputLimits;
import dev.weir.http.HttpSettings;
import dev.weir.tls.TlsSettings;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Function;

/**
 * The operational settings of a node: limits on what clients may send, how shutdown proceeds, TLS,
 * the HTTP listener's capacity and the status listener.
 *
 * @param limits the input limits
 * @param gracefulTerminationDelay how long a stopping node keeps serving while reporting not ready,
 *     so load balancers stop sending to it first ({@code WEIR_GRACEFUL_TERMINATION_DELAY})
 * @param drainTimeout the most a stopping node waits for calls in flight ({@code
 *     WEIR_DRAIN_TIMEOUT})
 * @param tls the TLS settings of both listeners and of calls to peers
 * @param http the HTTP listener's threads, limits and timeouts; its body limit is always {@code
 *     limits.maxHttpBodyBytes()}
 * @param statusAddress where the status listener binds, absent when it is off ({@code
 *     WEIR_STATUS_HTTP_ADDRESS})
 */
record OpsSettings(
    InputLimits limits,
    Duration gracefulTerminationDelay,
    Duration drainTimeout,
    TlsSettings tls,
    HttpSettings http,
    Optional<HostPort> statusAddress) {

  /** Takes the HTTP body limit from {@code limits}. */
  OpsSettings {
    http = http.withMaxBodyBytes(limits.maxHttpBodyBytes());
  }

  /** Settings with the default HTTP capacity and no status listener. */
  OpsSettings(
      InputLimits limits, Duration gracefulTerminationDelay, Duration drainTimeout, TlsSettings tls) {
    this(limits, gracefulTerminationDelay, drainTimeout, tls, Optional.empty());
  }

  /** Settings with the default HTTP capacity and a status listener at {@code statusAddress}. */
  OpsSettings(
      InputLimits limits,
      Duration gracefulTerminationDelay,
      Duration drainTimeout,
      TlsSettings tls,
      Optional<HostPort> statusAddress) {
    this(
        limits, gracefulTerminationDelay, drainTimeout, tls, HttpSettings.defaults(), statusAddress);
  }

  /** Settings without TLS. */
  OpsSettings(InputLimits limits, Duration gracefulTerminationDelay, Duration drainTimeout) {
    this(limits, gracefulTerminationDelay, drainTimeout, TlsSettings.DISABLED);
  }

  /** {@code WEIR_GRACEFUL_TERMINATION_DELAY}: a duration such as {@code 5s}. */
  static final EnvVar GRACEFUL_TERMINATION_DELAY = EnvVar.of("WEIR_GRACEFUL_TERMINATION_DELAY");

  /**
   * Gubernator's {@code GUBER_GRACEFUL_TERMINATION_DELAY_SEC}: whole seconds, not read when {@code
   * WEIR_GRACEFUL_TERMINATION_DELAY} is set.
   */
  static final EnvVar GRACEFUL_TERMINATION_DELAY_SEC =
      EnvVar.of("GUBER_GRACEFUL_TERMINATION_DELAY_SEC");

  /** {@code WEIR_DRAIN_TIMEOUT}: a duration such as {@code 10s}. */
  static final EnvVar DRAIN_TIMEOUT = EnvVar.of("WEIR_DRAIN_TIMEOUT");

  /** {@code WEIR_STATUS_HTTP_ADDRESS}, alias {@code GUBER_STATUS_HTTP_ADDRESS}: a host:port. */
  static final EnvVar STATUS_HTTP_ADDRESS =
      EnvVar.of("WEIR_STATUS_HTTP_ADDRESS", "GUBER_STATUS_HTTP_ADDRESS");

  /** The defaults: default limits, no delay, 10 s to drain. */
  static final OpsSettings DEFAULTS =
      new OpsSettings(InputLimits.DEFAULTS, Duration.ZERO, Duration.ofSeconds(10));

  /**
   * Checks that no two listeners (HTTP, gRPC, the peer listener when {@code peerAddress} is given,
   * and the status listener when set) take one port on the same host (a wildcard host overlaps
   * every host); port 0 never clashes.
   *
   * @param names gives the variable the user set for each setting (a {@code GUBER_*} alias or the
   *     {@code WEIR_*} name)
   * @throws ConfigException naming both variables and their values
   */
  void checkPortsDistinct(
      WeirConfig config, Optional<HostPort> peerAddress, Function<EnvVar, String> names) {
    if (statusAddress.isPresent()) {
      HostPort status = statusAddress.get();
      clash(names, STATUS_HTTP_ADDRESS, status, "status", WeirConfig.HTTP_ADDRESS, config.httpAddress());
      clash(names, STATUS_HTTP_ADDRESS, status, "status", WeirConfig.GRPC_ADDRESS, config.grpcAddress());
    }
    clash(
        names,
        WeirConfig.HTTP_ADDRESS,
        config.httpAddress(),
        "HTTP",
        WeirConfig.GRPC_ADDRESS,
        config.grpcAddress());
    if (peerAddress.isPresent()) {
      HostPort peer = peerAddress.get();
      clash(names, PeerSettings.ADDRESS, peer, "peer", WeirConfig.GRPC_ADDRESS, config.grpcAddress());
      clash(names, PeerSettings.ADDRESS, peer, "peer", WeirConfig.HTTP_ADDRESS, config.httpAddress());
      statusAddress.ifPresent(
          status -> clash(names, STATUS_HTTP_ADDRESS, status, "status", PeerSettings.ADDRESS, peer));
    }
  }

  private static void clash(
      Function<EnvVar, String> names,
      EnvVar variable,
      HostPort address,
      String listener,
      EnvVar otherVariable,
      HostPort other) {
    boolean sameHost =
        address.isWildcard()
            || other.isWildcard()
            || address.host().equalsIgnoreCase(other.host());
    if (address.port() != 0 && address.port() == other.port() && sameHost) {
      throw new ConfigException(
          names.apply(variable)
              + "='"
              + address
              + "' is not valid: its port is taken by "
              + names.apply(otherVariable)
              + "='"
              + other
              + "'; give the "
              + listener
              + " listener a port of its own");
    }
  }

  /** Reads the settings from {@code env}. */
  static OpsSettings from(EnvReader env) {
    Duration delay =
        env.lookup(GRACEFUL_TERMINATION_DELAY).isEmpty()
            ? Duration.ofSeconds(env.intInRange(GRACEFUL_TERMINATION_DELAY_SEC, 0, 0, 3600))
            : env.duration(
                GRACEFUL_TERMINATION_DELAY, Duration.ZERO, Duration.ZERO, Duration.ofHours(1));
    Duration drain =
        env.duration(DRAIN_TIMEOUT, DEFAULTS.drainTimeout, Duration.ZERO, Duration.ofHours(1));
    Optional<HostPort> status = Optional.ofNullable(env.hostPort(STATUS_HTTP_ADDRESS, null));
    InputLimits limits = InputLimits.from(env);
    return new OpsSettings(
        limits,
        delay,
        drain,
        TlsSettings.from(env),
        HttpSettings.from(env, limits),
        status);
  }
}
