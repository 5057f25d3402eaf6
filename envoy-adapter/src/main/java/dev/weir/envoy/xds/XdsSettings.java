package dev.weir.envoy.xds;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostPort;
import dev.weir.tls.PemFiles;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

/**
 * How the xDS config source reaches its management server: envoyproxy/ratelimit's {@code
 * CONFIG_GRPC_XDS_*} settings, read in Weir mode as {@code WEIR_ENVOY_XDS_*}.
 *
 * @param serverAddress the ADS server, {@code host:port}
 * @param nodeId the node id sent with every request
 * @param nodeMetadata the node's metadata, string values
 * @param headers gRPC metadata added to the stream
 * @param useTls whether the connection uses TLS
 * @param clientCert the client certificate chain presented to the server, PEM
 * @param clientKey the client certificate's private key, PEM
 * @param caCert the CAs the server certificate must chain to, PEM; empty means the JVM's
 * @param serverName the name the server certificate must carry, instead of the address's host
 * @param retry how long to wait before connecting again after the stream ends
 * @param maxMessageBytes the largest response accepted
 * @param tlsFileVariables the variables, as set, that name the TLS files, for error messages
 */
public record XdsSettings(
    HostPort serverAddress,
    String nodeId,
    Map<String, String> nodeMetadata,
    Map<String, String> headers,
    boolean useTls,
    Optional<Path> clientCert,
    Optional<Path> clientKey,
    Optional<Path> caCert,
    Optional<String> serverName,
    Backoff retry,
    int maxMessageBytes,
    String tlsFileVariables) {

  /** Creates settings, copying the maps. */
  public XdsSettings {
    Objects.requireNonNull(serverAddress, "serverAddress");
    Objects.requireNonNull(nodeId, "nodeId");
    nodeMetadata = Map.copyOf(nodeMetadata);
    headers = Map.copyOf(headers);
    Objects.requireNonNull(retry, "retry");
    Objects.requireNonNull(tlsFileVariables, "tlsFileVariables");
  }

  /** {@code WEIR_ENVOY_XDS_SERVER_URL}: the ADS server's {@code host:port}. */
  public static final EnvVar SERVER_URL = EnvVar.of("WEIR_ENVOY_XDS_SERVER_URL");

  /** {@code WEIR_ENVOY_XDS_NODE_ID}. */
  public static final EnvVar NODE_ID = EnvVar.of("WEIR_ENVOY_XDS_NODE_ID");

  /** {@code WEIR_ENVOY_XDS_NODE_METADATA}: {@code key=value} pairs separated by commas. */
  public static final EnvVar NODE_METADATA = EnvVar.of("WEIR_ENVOY_XDS_NODE_METADATA");

  /** {@code WEIR_ENVOY_XDS_CLIENT_ADDITIONAL_HEADERS}: {@code key:value} pairs, commas between. */
  public static final EnvVar ADDITIONAL_HEADERS =
      EnvVar.of("WEIR_ENVOY_XDS_CLIENT_ADDITIONAL_HEADERS");

  /** {@code WEIR_ENVOY_XDS_SERVER_CONNECT_RETRY_INTERVAL}: the first wait before reconnecting. */
  public static final EnvVar CONNECT_RETRY_INTERVAL =
      EnvVar.of("WEIR_ENVOY_XDS_SERVER_CONNECT_RETRY_INTERVAL");

  /** {@code WEIR_ENVOY_XDS_BACKOFF_MAX_INTERVAL}: the longest wait before reconnecting. */
  public static final EnvVar BACKOFF_MAX_INTERVAL =
      EnvVar.of("WEIR_ENVOY_XDS_BACKOFF_MAX_INTERVAL");

  /** {@code WEIR_ENVOY_XDS_BACKOFF_RANDOM_FACTOR}: how far each wait is spread (0 to 1). */
  public static final EnvVar BACKOFF_RANDOM_FACTOR =
      EnvVar.of("WEIR_ENVOY_XDS_BACKOFF_RANDOM_FACTOR");

  /** {@code WEIR_ENVOY_XDS_BACKOFF_JITTER}: whether the waits are spread at all. */
  public static final EnvVar BACKOFF_JITTER = EnvVar.of("WEIR_ENVOY_XDS_BACKOFF_JITTER");

  /** {@code WEIR_ENVOY_XDS_MAX_MSG_SIZE_IN_BYTES}. */
  public static final EnvVar MAX_MSG_SIZE = EnvVar.of("WEIR_ENVOY_XDS_MAX_MSG_SIZE_IN_BYTES");

  /** {@code WEIR_ENVOY_XDS_SERVER_USE_TLS}. */
  public static final EnvVar SERVER_USE_TLS = EnvVar.of("WEIR_ENVOY_XDS_SERVER_USE_TLS");

  /** {@code WEIR_ENVOY_XDS_CLIENT_TLS_CERT}. */
  public static final EnvVar CLIENT_TLS_CERT = EnvVar.of("WEIR_ENVOY_XDS_CLIENT_TLS_CERT");

  /** {@code WEIR_ENVOY_XDS_CLIENT_TLS_KEY}. */
  public static final EnvVar CLIENT_TLS_KEY = EnvVar.of("WEIR_ENVOY_XDS_CLIENT_TLS_KEY");

  /** {@code WEIR_ENVOY_XDS_SERVER_TLS_CACERT}. */
  public static final EnvVar SERVER_TLS_CACERT = EnvVar.of("WEIR_ENVOY_XDS_SERVER_TLS_CACERT");

  /** {@code WEIR_ENVOY_XDS_SERVER_TLS_SAN}. */
  public static final EnvVar SERVER_TLS_SAN = EnvVar.of("WEIR_ENVOY_XDS_SERVER_TLS_SAN");

  /** envoyproxy/ratelimit's default server, {@code localhost:18000}. */
  public static final HostPort DEFAULT_SERVER = new HostPort("localhost", 18000);

  private static final int DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

  /** The settings when no variable is set. */
  public static final XdsSettings DEFAULTS = from(new EnvReader(Map.of()), UnaryOperator.identity());

  /**
   * Reads the settings through {@code reader}, each variable under the name {@code names} gives
   * it (the identity for the {@code WEIR_ENVOY_XDS_*} names); a bad value throws {@link
   * ConfigException} naming the variable, the value and what is allowed.
   */
  public static XdsSettings from(EnvReader reader, UnaryOperator<EnvVar> names) {
    EnvVar metadataVar = names.apply(NODE_METADATA);
    EnvVar headersVar = names.apply(ADDITIONAL_HEADERS);
    PemFiles tls =
        PemFiles.read(
            reader,
            names.apply(CLIENT_TLS_CERT),
            names.apply(CLIENT_TLS_KEY),
            names.apply(SERVER_TLS_CACERT));
    Duration initial =
        reader.duration(
            names.apply(CONNECT_RETRY_INTERVAL),
            Duration.ofSeconds(3),
            Duration.ofMillis(10),
            Duration.ofHours(1));
    Duration max =
        reader.duration(
            names.apply(BACKOFF_MAX_INTERVAL),
            Duration.ofSeconds(60),
            Duration.ofMillis(10),
            Duration.ofHours(1));
    double factor = reader.ratio(names.apply(BACKOFF_RANDOM_FACTOR), 0.5);
    boolean jitter = reader.bool(names.apply(BACKOFF_JITTER), true);
    boolean useTls = reader.bool(names.apply(SERVER_USE_TLS), false);
    return new XdsSettings(
        reader.grpcTarget(names.apply(SERVER_URL), DEFAULT_SERVER),
        reader.string(names.apply(NODE_ID), "default"),
        pairs(reader, metadataVar, '=', "key=value pairs separated by commas, e.g. a=1,b=2"),
        pairs(reader, headersVar, ':', "key:value pairs separated by commas, e.g. a:1,b:2"),
        useTls,
        tls.cert(),
        tls.key(),
        tls.ca(),
        reader
            .lookup(names.apply(SERVER_TLS_SAN))
            .map(setting -> useTls ? serverName(setting) : setting.value()),
        new Backoff(initial, max.compareTo(initial) < 0 ? initial : max, jitter ? factor : 0),
        reader.intInRange(
            names.apply(MAX_MSG_SIZE), DEFAULT_MAX_MESSAGE_BYTES, 65_536, 256 * 1024 * 1024),
        tlsFileVariables(reader, names));
  }

  /**
   * Returns the name {@code setting} holds, which gRPC takes as the authority it checks the
   * server certificate for; one whose host (before an optional {@code :port}) {@link
   * HostPort#isTlsName} refuses throws {@link ConfigException} naming the variable and the value:
   * gRPC accepts a space or an '_' in it but then fails every TLS handshake, and refuses user info
   * ('@') when the channel is built. With a port the host must also be one {@link
   * HostPort#isGrpcHost} accepts: gRPC checks the certificate for a whole authority it cannot
   * parse, port included ({@code envoy-gateway.1team:443}), so every handshake would fail.
   */
  private static String serverName(EnvReader.Setting setting) {
    String name = setting.value();
    boolean withPort = name.matches(".*[^:]:[0-9]{1,5}");
    String host = withPort ? name.substring(0, name.lastIndexOf(':')) : name;
    if (!HostPort.isTlsName(host)) {
      throw ConfigException.invalid(
          setting.variable(),
          name,
          "the host name or IP address the xDS server's certificate carries, "
              + HostPort.TLS_NAMES
              + ", e.g. envoy-gateway, 10.0.0.5 or [::1]");
    }
    if (withPort && !HostPort.isGrpcHost(host)) {
      throw ConfigException.invalid(
          setting.variable(),
          name,
          "the name without the port, or with a port after " + HostPort.GRPC_HOSTS);
    }
    return name;
  }

  /**
   * Returns the TLS file variables set in {@code reader}, each under the name it is set by,
   * joined for a message ("A", "A and B", "A, B and C").
   */
  private static String tlsFileVariables(EnvReader reader, UnaryOperator<EnvVar> names) {
    List<String> set =
        Stream.of(CLIENT_TLS_CERT, CLIENT_TLS_KEY, SERVER_TLS_CACERT)
            .map(names)
            .filter(var -> reader.lookup(var).isPresent())
            .map(reader::nameSet)
            .toList();
    if (set.size() < 2) {
      return String.join("", set);
    }
    return String.join(", ", set.subList(0, set.size() - 1)) + " and " + set.get(set.size() - 1);
  }

  /**
   * Parses {@code key<sep>value} pairs separated by commas; an entry without the separator is
   * skipped, as envoyproxy/ratelimit skips it. Headers ({@code ':'}) throw instead, as they do for
   * a name gRPC would refuse when the channel opens.
   */
  private static Map<String, String> pairs(
      EnvReader reader, EnvVar var, char separator, String expected) {
    Optional<EnvReader.Setting> setting = reader.lookup(var);
    if (setting.isEmpty()) {
      return Map.of();
    }
    Map<String, String> out = new LinkedHashMap<>();
    String[] entries = setting.get().value().split(",");
    for (int i = 0; i < entries.length; i++) {
      String entry = entries[i];
      int at = entry.indexOf(separator);
      if (at >= 0 && separator == ':') {
        String key = entry.substring(0, at).trim();
        String problem = headerNameProblem(key);
        if (problem != null) {
          throw new ConfigException(
              setting.get().variable()
                  + " is not valid: entry "
                  + (i + 1)
                  + " of "
                  + entries.length
                  + " has the header name '"
                  + key
                  + "', which "
                  + problem
                  + " (its value is not shown: headers may carry credentials); a header name is"
                  + " one or more of a-z, 0-9, '-', '_' and '.' (upper case is lowered)");
        }
        out.put(key, entry.substring(at + 1).trim());
      } else if (at > 0) {
        out.put(entry.substring(0, at).trim(), entry.substring(at + 1).trim());
      } else if (!entry.isBlank() && separator == ':') {
        throw new ConfigException(
            setting.get().variable()
                + " is not valid: entry "
                + (i + 1)
                + " of "
                + entries.length
                + " has no ':' (its value is not shown: headers may carry credentials); expected "
                + expected);
      }
    }
    return out;
  }

  /**
   * Returns why gRPC would refuse {@code name} as a header name ({@code Metadata.Key.of}, which
   * lowers it first), or null when it is valid. A name ending in {@code -bin} is valid: it is sent
   * as a binary header, as grpc-go's {@code metadata.New} in envoyproxy/ratelimit sends it.
   */
  private static String headerNameProblem(String name) {
    if (name.isEmpty()) {
      return "is empty";
    }
    String lower = name.toLowerCase(Locale.ROOT);
    for (int i = 0; i < lower.length(); i++) {
      char c = lower.charAt(i);
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')) {
        return "holds the character '" + c + "'";
      }
    }
    return null;
  }

  /**
   * The waits before reconnecting: {@code initial} after the first failure, doubling up to {@code
   * max}, each spread at random by up to {@code randomFactor} of itself either way; back to {@code
   * initial} once a set of resources is accepted (loaded and ACKed), or when a stream ends that had
   * stayed open at least {@code max} (a healthy stream a server or balancer closed: resubscribed at
   * the accepted version, a snapshot cache answers nothing until something changes); a response
   * that is NACKed or ignored does not reset it.
   */
  public record Backoff(Duration initial, Duration max, double randomFactor) {

    /** Returns the wait before attempt {@code attempt} (0 for the first), for {@code random}. */
    public Duration delay(int attempt, double random) {
      long base = initial.toNanos();
      for (int i = 0; i < attempt && base < max.toNanos(); i++) {
        base *= 2;
      }
      base = Math.min(base, max.toNanos());
      double spread = 1 + randomFactor * (2 * random - 1);
      return Duration.ofNanos((long) (base * spread));
    }
  }
}
