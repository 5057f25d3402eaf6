package dev.weir.e2e.envoy;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * The shipped front-proxy bootstrap adapted to run in a container whose upstreams are processes on
 * the test's host: the {@code weir_ratelimit} and {@code echo} clusters point at {@code host:port}
 * pairs given by the test and resolve names through the system resolver (so {@code /etc/hosts}
 * entries such as Testcontainers' {@code host.testcontainers.internal} work), and the rate-limit
 * call gets a longer timeout so a cold JVM on a busy CI machine does not turn the first calls into
 * failure-mode answers. Everything else (listeners, routes, filters, failure modes) is the shipped
 * configuration unchanged.
 */
public final class ContainerBootstrap {
  /** The rate-limit cluster's name in the shipped bootstrap. */
  public static final String RATE_LIMIT_CLUSTER = "weir_ratelimit";

  /** The upstream cluster's name in the shipped bootstrap. */
  public static final String ECHO_CLUSTER = "echo";

  /** The rate-limit call timeout used in the container. */
  public static final String RATE_LIMIT_TIMEOUT = "2s";

  private static final String RESOLVER_NAME = "envoy.network.dns_resolver.getaddrinfo";
  private static final String RESOLVER_TYPE =
      "type.googleapis.com/envoy.extensions.network.dns_resolver.getaddrinfo.v3.GetAddrInfoDnsResolverConfig";

  private ContainerBootstrap() {}

  /** Returns an adapted deep copy of the bootstrap tree; the input is not modified. */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> adapt(
      Object bootstrap, String host, int weirPort, int echoPort) {
    Map<String, Object> copy = (Map<String, Object>) deepCopy(bootstrap);
    Map<String, Object> resources = (Map<String, Object>) copy.get("static_resources");
    List<Object> clusters = (List<Object>) resources.get("clusters");
    pointAt(cluster(clusters, RATE_LIMIT_CLUSTER), host, weirPort);
    pointAt(cluster(clusters, ECHO_CLUSTER), host, echoPort);
    for (Object listener : (List<Object>) resources.get("listeners")) {
      for (Map<String, Object> filter : rateLimitFilters((Map<String, Object>) listener)) {
        ((Map<String, Object>) filter.get("typed_config")).put("timeout", RATE_LIMIT_TIMEOUT);
      }
    }
    return copy;
  }

  /**
   * Returns a deep copy of the bootstrap tree whose clusters named in {@code ports} point at {@code
   * host} and their port, resolving through the system resolver; nothing else changes.
   */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> adaptUpstreams(
      Object bootstrap, String host, Map<String, Integer> ports) {
    Map<String, Object> copy = (Map<String, Object>) deepCopy(bootstrap);
    Map<String, Object> resources = (Map<String, Object>) copy.get("static_resources");
    List<Object> clusters = (List<Object>) resources.get("clusters");
    ports.forEach((name, port) -> pointAt(cluster(clusters, name), host, port));
    return copy;
  }

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> rateLimitFilters(Map<String, Object> listener) {
    List<Map<String, Object>> found = new ArrayList<>();
    for (Object chain : (List<Object>) listener.get("filter_chains")) {
      for (Object network : (List<Object>) ((Map<String, Object>) chain).get("filters")) {
        Map<String, Object> hcm =
            (Map<String, Object>) ((Map<String, Object>) network).get("typed_config");
        for (Object http : (List<Object>) hcm.getOrDefault("http_filters", List.of())) {
          Map<String, Object> filter = (Map<String, Object>) http;
          if (RateLimitFilterModel.RATE_LIMIT_FILTER.equals(filter.get("name"))) {
            found.add(filter);
          }
        }
      }
    }
    return found;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> cluster(List<Object> clusters, String name) {
    return clusters.stream()
        .map(cluster -> (Map<String, Object>) cluster)
        .filter(cluster -> name.equals(cluster.get("name")))
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("bootstrap has no cluster '" + name + "'"));
  }

  private static void pointAt(Map<String, Object> cluster, String host, int port) {
    Map<String, Object> socketAddress = new LinkedHashMap<>();
    socketAddress.put("address", host);
    socketAddress.put("port_value", port);
    Map<String, Object> endpoint =
        Map.of("endpoint", Map.of("address", Map.of("socket_address", socketAddress)));
    Map<String, Object> loadAssignment = new LinkedHashMap<>();
    loadAssignment.put("cluster_name", cluster.get("name"));
    loadAssignment.put("endpoints", List.of(Map.of("lb_endpoints", List.of(endpoint))));
    cluster.put("load_assignment", loadAssignment);
    Map<String, Object> resolver = new LinkedHashMap<>();
    resolver.put("name", RESOLVER_NAME);
    resolver.put("typed_config", Map.of("@type", RESOLVER_TYPE));
    cluster.put("typed_dns_resolver_config", resolver);
  }

  private static Object deepCopy(Object tree) {
    return new Yaml(new SafeConstructor(new LoaderOptions())).load(EnvoyYaml.toJson(tree));
  }
}
