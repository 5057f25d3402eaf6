package dev.weir.discovery.etcd;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.HostPort;
import dev.weir.core.discovery.DiscoveryEnv;
import io.netty.handler.ssl.SslContextBuilder;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The settings of etcd discovery.
 *
 * @param endpoints etcd client URLs ({@code http://host:port} or {@code https://host:port}); a bare
 *     {@code host:port} gets the scheme matching {@code tls}
 * @param keyPrefix prefix under which every node registers its advertise address
 * @param dialTimeout time allowed to connect and for each etcd call
 * @param leaseTtl time-to-live of the registration lease
 * @param user etcd user, empty for none
 * @param password etcd password, empty for none
 * @param tls TLS settings, empty for plaintext
 * @param dataCenter data center recorded in this node's registration; only registrations of this
 *     data center join the ring
 * @param advertiseAddress address to register instead of the node's advertise address, empty for that
 * @param keyPrefixVariable the variable that set {@code keyPrefix} ({@code WEIR_ETCD_KEY_PREFIX} or
 *     {@code GUBER_ETCD_KEY_PREFIX}), named in what is logged about it
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
    Optional<String> advertiseAddress,
    String keyPrefixVariable) {

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

  /** The variable that sets the key prefix, under Weir's name. */
  public static final String KEY_PREFIX_VARIABLE = "WEIR_ETCD_KEY_PREFIX";

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

  /**
   * Reads {@code WEIR_ETCD_*} (or {@code GUBER_ETCD_*}) settings; defaults follow Gubernator's. TLS is
   * on when an endpoint is {@code https://} or a {@code WEIR_ETCD_TLS_*} variable is set; without a CA
   * file it trusts the JVM's trust store. The data center is {@code WEIR_ETCD_DATA_CENTER}, else the
   * node's {@code WEIR_DATA_CENTER} (alias {@code GUBER_DATA_CENTER}), else empty.
   */
  public static EtcdSettings fromEnv(DiscoveryEnv env) {
    List<String> endpoints = env.list("ETCD_ENDPOINTS", List.of("localhost:2379"));
    if (endpoints.isEmpty()) {
      throw env.invalid("ETCD_ENDPOINTS", env.string("ETCD_ENDPOINTS", ""), ENDPOINTS_ALLOWED);
    }
    boolean anyHttps = false;
    boolean anyHttp = false;
    for (String endpoint : endpoints) {
      String scheme = checkEndpoint(env, endpoint);
      anyHttps |= scheme.equals("https");
      anyHttp |= scheme.equals("http");
    }
    if (anyHttps && anyHttp) {
      throw env.invalid(
          "ETCD_ENDPOINTS",
          env.string("ETCD_ENDPOINTS", ""),
          "every endpoint https:// (TLS) or every endpoint http:// (plaintext), not both");
    }
    Optional<String> advertise = env.raw("ETCD_ADVERTISE_ADDRESS");
    if (advertise.isPresent()) {
      try {
        if (HostPort.parseGrpcTarget(advertise.get()).isWildcard()) {
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
      String set = cert.isPresent() ? "ETCD_TLS_CERT" : "ETCD_TLS_KEY";
      String missing = cert.isPresent() ? "ETCD_TLS_KEY" : "ETCD_TLS_CERT";
      String setName = env.name(set);
      String prefix = setName.substring(0, setName.length() - set.length());
      throw ConfigException.invalid(
          prefix + missing,
          "",
          "set together with " + setName + "='" + env.string(set, "") + "'");
    }
    checkPem(env, ca, cert, key);
    boolean skipVerify = env.bool("ETCD_TLS_SKIP_VERIFY", false);
    boolean tlsEnable = env.bool("ETCD_TLS_ENABLE", false);
    if (anyHttp) {
      for (String suffix :
          List.of("ETCD_TLS_ENABLE", "ETCD_TLS_CA", "ETCD_TLS_CERT", "ETCD_TLS_SKIP_VERIFY")) {
        boolean set =
            switch (suffix) {
              case "ETCD_TLS_ENABLE" -> tlsEnable;
              case "ETCD_TLS_CA" -> ca.isPresent();
              case "ETCD_TLS_CERT" -> cert.isPresent();
              default -> skipVerify;
            };
        if (set) {
          throw env.invalid(
              "ETCD_ENDPOINTS",
              env.string("ETCD_ENDPOINTS", ""),
              "https:// or bare host:port endpoints while TLS towards etcd is on ("
                  + env.name(suffix)
                  + " is set); an http:// endpoint is plaintext");
        }
      }
    }
    boolean tlsOn = anyHttps || tlsEnable || ca.isPresent() || cert.isPresent() || skipVerify;
    return new EtcdSettings(
        endpoints,
        env.string("ETCD_KEY_PREFIX", DEFAULT_KEY_PREFIX),
        env.duration("ETCD_DIAL_TIMEOUT", Duration.ofSeconds(5), Duration.ofMillis(1)),
        leaseTtl,
        env.string("ETCD_USER", ""),
        env.string("ETCD_PASSWORD", ""),
        tlsOn ? Optional.of(new Tls(ca, cert, key, skipVerify)) : Optional.empty(),
        env.string("ETCD_DATA_CENTER", env.string("DATA_CENTER", "")),
        advertise.map(String::trim),
        env.name("ETCD_KEY_PREFIX"));
  }

  private static final String ENDPOINTS_ALLOWED =
      "a comma-separated list of host:port or http(s)://host:port URLs";

  /**
   * Checks one etcd endpoint, {@code host:port} or {@code http://} or {@code https://} followed by
   * one, and returns its scheme in lower case ({@code ""} for a bare address).
   */
  private static String checkEndpoint(DiscoveryEnv env, String endpoint) {
    String address = endpoint;
    String scheme = "";
    String problem = null;
    int schemeEnd = endpoint.indexOf("://");
    if (schemeEnd >= 0) {
      scheme = endpoint.substring(0, schemeEnd).toLowerCase(Locale.ROOT);
      address = endpoint.substring(schemeEnd + 3);
      address = address.endsWith("/") ? address.substring(0, address.length() - 1) : address;
      if (!scheme.equals("http") && !scheme.equals("https")) {
        problem = "scheme '" + scheme + "://' is not supported; use http:// or https://";
      }
    }
    if (problem == null) {
      try {
        HostPort hostPort = HostPort.parseSetting(address);
        if (hostPort.host().isEmpty()) {
          problem = "it has no host";
        } else if (URI.create("http://" + address).getHost() == null) {
          problem = "'" + hostPort.host() + "' is not a valid host name (letters, digits, '-' and '.'; no '_')";
        }
      } catch (IllegalArgumentException e) {
        problem = e.getMessage();
      }
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
    return scheme;
  }

  /** Checks that the TLS files hold what TLS towards etcd reads from them. */
  private static void checkPem(
      DiscoveryEnv env, Optional<Path> ca, Optional<Path> cert, Optional<Path> key) {
    if (ca.isPresent()) {
      try {
        SslContextBuilder.forClient().trustManager(ca.get().toFile());
      } catch (IllegalArgumentException e) {
        throw env.invalid("ETCD_TLS_CA", ca.get().toString(), "a PEM file of CA certificates (" + e.getMessage() + ")");
      }
    }
    if (cert.isPresent() && key.isPresent()) {
      try {
        SslContextBuilder.forClient().trustManager(cert.get().toFile());
      } catch (IllegalArgumentException e) {
        throw env.invalid(
            "ETCD_TLS_CERT", cert.get().toString(), "a PEM file of the client certificate (" + e.getMessage() + ")");
      }
      try {
        SslContextBuilder.forClient().keyManager(cert.get().toFile(), key.get().toFile());
      } catch (IllegalArgumentException e) {
        throw env.invalid(
            "ETCD_TLS_KEY", key.get().toString(), "a PEM (PKCS#8) file of the client key (" + e.getMessage() + ")");
      }
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
        endpoints, prefix, dialTimeout, leaseTtl, user, password, tls, dataCenter, advertiseAddress,
        keyPrefixVariable);
  }

  /** Returns these settings with another lease TTL. */
  public EtcdSettings withLeaseTtl(Duration ttl) {
    return new EtcdSettings(
        endpoints, keyPrefix, dialTimeout, ttl, user, password, tls, dataCenter, advertiseAddress,
        keyPrefixVariable);
  }

  /** Returns these settings with another dial timeout. */
  public EtcdSettings withDialTimeout(Duration timeout) {
    return new EtcdSettings(
        endpoints, keyPrefix, timeout, leaseTtl, user, password, tls, dataCenter, advertiseAddress,
        keyPrefixVariable);
  }

  /** Returns a string of these settings with the password masked. */
  @Override
  public String toString() {
    return "EtcdSettings[endpoints=" + endpoints + ", keyPrefix=" + keyPrefix + ", dialTimeout=" + dialTimeout
        + ", leaseTtl=" + leaseTtl + ", user=" + user + ", password=" + (password.isEmpty() ? "" : "****")
        + ", tls=" + tls + ", dataCenter=" + dataCenter + ", advertiseAddress=" + advertiseAddress + "]";
  }
}
