package dev.weir.discovery.etcd;

import dev.weir.core.config.HostPort;
import dev.weir.core.discovery.DiscoveryEnv;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The settings of etcd discovery.
 *
 * @param endpoints etcd client URLs ({@code http://host:port}); a bare {@code host:port} gets the scheme
 *     matching {@code tls}
 * @param keyPrefix prefix under which every node registers its advertise address
 * @param dialTimeout time allowed to connect and for each etcd call
 * @param leaseTtl time-to-live of the registration lease
 * @param user etcd user, empty for none
 * @param password etcd password, empty for none
 * @param tls TLS settings, empty for plaintext
 * @param dataCenter data center recorded in this node's registration
 * @param advertiseAddress address to register instead of the node's advertise address, empty for that
 */
public record EtcdSettings(
    List<String> endpoints,
    String keyPrefix,
    Duration dialTimeout,
    Duration leaseTtl,
    String user,
    String password,
    Optional<Tls> tls,
    String dataCenter,
    Optional<String> advertiseAddress) {

  /** The default key prefix. */
  public static final String DEFAULT_KEY_PREFIX = "/weir-peers/";

  /**
   * TLS towards etcd.
   *
   * @param caFile PEM file of the CA that signs etcd's certificate, empty for the JVM's trust store
   * @param certFile PEM client certificate, empty for none
   * @param keyFile PEM (PKCS#8) client key, empty for none
   * @param skipVerify whether to accept any server certificate
   */
  public record Tls(
      Optional<Path> caFile, Optional<Path> certFile, Optional<Path> keyFile, boolean skipVerify) {}

  /** Creates settings, normalizing endpoints to URLs. */
  public EtcdSettings {
    String scheme = tls.isPresent() ? "https://" : "http://";
    endpoints = endpoints.stream().map(e -> e.contains("://") ? e : scheme + e).toList();
    if (endpoints.isEmpty()) {
      throw new IllegalArgumentException("etcd endpoints must not be empty");
    }
    if (leaseTtl.toSeconds() < 1) {
      throw new IllegalArgumentException("etcd lease TTL must be at least 1s, got " + leaseTtl);
    }
  }

  /** Reads {@code WEIR_ETCD_*} (or {@code GUBER_ETCD_*}) settings; defaults follow Gubernator's. */
  public static EtcdSettings fromEnv(DiscoveryEnv env) {
    List<String> endpoints = env.list("ETCD_ENDPOINTS", List.of("localhost:2379"));
    if (endpoints.isEmpty()) {
      throw env.invalid("ETCD_ENDPOINTS", env.string("ETCD_ENDPOINTS", ""), ENDPOINTS_ALLOWED);
    }
    for (String endpoint : endpoints) {
      checkEndpoint(env, endpoint);
    }
    Optional<String> advertise = env.raw("ETCD_ADVERTISE_ADDRESS");
    if (advertise.isPresent()) {
      try {
        if (HostPort.parseSetting(advertise.get()).isWildcard()) {
          throw new IllegalArgumentException("a wildcard host is no address peers can call");
        }
      } catch (IllegalArgumentException e) {
        throw env.invalid(
            "ETCD_ADVERTISE_ADDRESS",
            advertise.get(),
            "host:port that peers can call, e.g. 10.0.0.5:1051 or [fd00::5]:1051 (" + e.getMessage() + ")");
      }
    }
    Duration leaseTtl = env.duration("ETCD_LEASE_TTL", Duration.ofSeconds(30), Duration.ofSeconds(1));
    Optional<Path> ca = file(env, "ETCD_TLS_CA");
    Optional<Path> cert = file(env, "ETCD_TLS_CERT");
    Optional<Path> key = file(env, "ETCD_TLS_KEY");
    if (cert.isPresent() != key.isPresent()) {
      String missing = cert.isPresent() ? "ETCD_TLS_KEY" : "ETCD_TLS_CERT";
      throw env.invalid(missing, "", "set together with " + (cert.isPresent() ? "WEIR_ETCD_TLS_CERT" : "WEIR_ETCD_TLS_KEY"));
    }
    boolean skipVerify = env.bool("ETCD_TLS_SKIP_VERIFY", false);
    boolean tlsOn =
        env.bool("ETCD_TLS_ENABLE", false)
            || ca.isPresent()
            || cert.isPresent()
            || skipVerify;
    return new EtcdSettings(
        endpoints,
        env.string("ETCD_KEY_PREFIX", DEFAULT_KEY_PREFIX),
        env.duration("ETCD_DIAL_TIMEOUT", Duration.ofSeconds(5), Duration.ofMillis(1)),
        leaseTtl,
        env.string("ETCD_USER", ""),
        env.string("ETCD_PASSWORD", ""),
        tlsOn ? Optional.of(new Tls(ca, cert, key, skipVerify)) : Optional.empty(),
        env.string("ETCD_DATA_CENTER", ""),
        advertise.map(String::trim));
  }

  private static final String ENDPOINTS_ALLOWED =
      "a comma-separated list of host:port or http(s)://host:port URLs";

  /**
   * Checks one etcd endpoint: {@code host:port}, or {@code http://} or {@code https://} followed by
   * one; endpoints of jetcd's other schemes ({@code ip:///}, {@code dns+srv:///}) are left to jetcd.
   */
  private static void checkEndpoint(DiscoveryEnv env, String endpoint) {
    String address = endpoint;
    int schemeEnd = endpoint.indexOf("://");
    if (schemeEnd >= 0) {
      String scheme = endpoint.substring(0, schemeEnd).toLowerCase(Locale.ROOT);
      if (!scheme.equals("http") && !scheme.equals("https")) {
        if (scheme.matches("[a-z][a-z0-9+.-]*")) {
          return;
        }
      } else {
        address = endpoint.substring(schemeEnd + 3);
        address = address.endsWith("/") ? address.substring(0, address.length() - 1) : address;
      }
    }
    String problem;
    try {
      problem = HostPort.parseSetting(address).host().isEmpty() ? "it has no host" : null;
    } catch (IllegalArgumentException e) {
      problem = e.getMessage();
    }
    if (problem != null) {
      throw env.invalid(
          "ETCD_ENDPOINTS",
          env.string("ETCD_ENDPOINTS", ""),
          ENDPOINTS_ALLOWED
              + " (entry '"
              + endpoint
              + "': "
              + problem
              + (HostPort.runsTogether(endpoint) ? "; separate entries with commas" : "")
              + ")");
    }
  }

  private static Optional<Path> file(DiscoveryEnv env, String suffix) {
    Optional<String> value = env.raw(suffix);
    if (value.isPresent() && !Files.isReadable(Path.of(value.get()))) {
      throw env.invalid(suffix, value.get(), "a readable file");
    }
    return value.map(Path::of);
  }

  /** Returns these settings with another key prefix. */
  public EtcdSettings withKeyPrefix(String prefix) {
    return new EtcdSettings(
        endpoints, prefix, dialTimeout, leaseTtl, user, password, tls, dataCenter, advertiseAddress);
  }

  /** Returns these settings with another lease TTL. */
  public EtcdSettings withLeaseTtl(Duration ttl) {
    return new EtcdSettings(
        endpoints, keyPrefix, dialTimeout, ttl, user, password, tls, dataCenter, advertiseAddress);
  }

  /** Returns these settings with another dial timeout. */
  public EtcdSettings withDialTimeout(Duration timeout) {
    return new EtcdSettings(
        endpoints, keyPrefix, timeout, leaseTtl, user, password, tls, dataCenter, advertiseAddress);
  }

  /** Returns a string of these settings with the password masked. */
  @Override
  public String toString() {
    return "EtcdSettings[endpoints=" + endpoints + ", keyPrefix=" + keyPrefix + ", dialTimeout=" + dialTimeout
        + ", leaseTtl=" + leaseTtl + ", user=" + user + ", password=" + (password.isEmpty() ? "" : "****")
        + ", tls=" + tls + ", dataCenter=" + dataCenter + ", advertiseAddress=" + advertiseAddress + "]";
  }
}
