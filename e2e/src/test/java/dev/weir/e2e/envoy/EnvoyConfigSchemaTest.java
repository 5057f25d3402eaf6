package dev.weir.e2e.envoy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Any;
import com.google.protobuf.Message;
import dev.weir.core.limiter.InputLimits;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DescriptorConfigException;
import dev.weir.envoy.config.DomainConfig;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.config.RateLimitRule;
import dev.weir.envoy.match.DescriptorMatcher;
import dev.weir.envoy.match.Entry;
import dev.weir.envoy.match.Match;
import dev.weir.envoy.rlqs.BucketPlan;
import dev.weir.envoy.rlqs.BucketPlanner;
import dev.weir.envoy.rlqs.RlqsSettings;
import dev.weir.envoy.service.CounterKeys;
import io.envoyproxy.envoy.config.bootstrap.v3.Bootstrap;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.ApiVersion;
import io.envoyproxy.envoy.config.core.v3.HealthCheck;
import io.envoyproxy.envoy.config.listener.v3.Filter;
import io.envoyproxy.envoy.config.listener.v3.FilterChain;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.Route;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings;
import io.envoyproxy.envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaFilterConfig;
import io.envoyproxy.envoy.extensions.filters.http.ratelimit.v3.RateLimit;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter;
import io.envoyproxy.envoy.extensions.upstreams.http.v3.HttpProtocolOptions;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Checks the shipped Envoy configuration against Envoy's own API: every Envoy YAML under {@code
 * envoy-config/} parses into {@code Bootstrap} (and every Istio {@code EnvoyFilter} patch under
 * {@code manifests/} into the message its {@code applyTo} names) with unknown fields and unknown
 * {@code typed_config} types rejected; the rate-limit cluster a filter names exists and speaks
 * HTTP/2 over the v3 API; rate-limit features sit where Envoy honors them; the front proxy's routes
 * produce exactly the calls {@link EnvoyFlowIT} sends; every descriptor they can produce is limited
 * by a rule of the descriptor config beside it, found with Weir's own loader and matcher; and every
 * bucket the RLQS bootstrap's matchers build is limited by a rule of its descriptor config, found
 * with Weir's own bucket planner.
 */
class EnvoyConfigSchemaTest {
  private static final String HTTP_PROTOCOL_OPTIONS =
      "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";

  /** What a YAML file under envoy-config/ is, told by its top-level keys. */
  enum Kind {
    ENVOY_BOOTSTRAP,
    WEIR_DESCRIPTORS,
    DOCKER_COMPOSE,
    KUBERNETES_RESOURCE;

    static Kind of(Path file, Object document) {
      if (document instanceof Map<?, ?> map) {
        if (map.containsKey("static_resources") || map.containsKey("dynamic_resources")) {
          return ENVOY_BOOTSTRAP;
        }
        if (map.containsKey("domain") && map.containsKey("descriptors")) {
          return WEIR_DESCRIPTORS;
        }
        if (map.containsKey("services")) {
          return DOCKER_COMPOSE;
        }
        if (map.containsKey("apiVersion") && map.containsKey("kind")) {
          return KUBERNETES_RESOURCE;
        }
      }
      throw new AssertionError(
          file
              + " is neither an Envoy bootstrap, a Weir descriptor config, a compose file nor a"
              + " Kubernetes resource");
    }
  }

  @TestFactory
  Stream<DynamicTest> envoyConfigDirectory_everyYamlFile_isValidForWhatItIs() {
    List<Path> files = RepoFiles.yamlFilesUnder("envoy-config");
    assertThat(files).as("YAML files under envoy-config/").isNotEmpty();
    return files.stream()
        .map(
            file ->
                DynamicTest.dynamicTest(
                    RepoFiles.root().relativize(file).toString(),
                    () -> {
                      Object document = EnvoyYaml.load(file);
                      switch (Kind.of(file, document)) {
                        case ENVOY_BOOTSTRAP ->
                            checkBootstrap(file, EnvoyYaml.parse(document, Bootstrap.newBuilder()));
                        case WEIR_DESCRIPTORS ->
                            assertThat(weirRules(file).domains())
                                .as(file + " domains")
                                .isNotEmpty();
                        case DOCKER_COMPOSE -> checkCompose(file, (Map<?, ?>) document);
                        case KUBERNETES_RESOURCE ->
                            checkEnvoyGatewayResource(file, (Map<?, ?>) document);
                      }
                    }));
  }

  // Envoy Gateway's resources (envoy-config/envoy-gateway/): its configuration runs Weir's image as
  // the rate-limit Deployment, and the policy asks for a global limit.
  private static void checkEnvoyGatewayResource(Path file, Map<?, ?> resource) {
    switch (String.valueOf(resource.get("kind"))) {
      case "ConfigMap" -> {
        Object embedded =
            new org.yaml.snakeyaml.Yaml()
                .load((String) ((Map<?, ?>) resource.get("data")).get("envoy-gateway.yaml"));
        Map<?, ?> gateway = (Map<?, ?>) embedded;
        assertThat(gateway.get("kind")).as(file + " embedded kind").isEqualTo("EnvoyGateway");
        Map<?, ?> kubernetes = (Map<?, ?>) ((Map<?, ?>) gateway.get("provider")).get("kubernetes");
        Map<?, ?> container =
            (Map<?, ?>) ((Map<?, ?>) kubernetes.get("rateLimitDeployment")).get("container");
        assertThat(container.get("image")).as(file + " rate-limit image").isEqualTo("weir:0.1.0");
      }
      case "BackendTrafficPolicy" ->
          assertThat(((Map<?, ?>) ((Map<?, ?>) resource.get("spec")).get("rateLimit")).get("type"))
              .as(file + " rate limit type")
              .isEqualTo("Global");
      default -> throw new AssertionError(file + ": unexpected kind " + resource.get("kind"));
    }
  }

  @TestFactory
  Stream<DynamicTest> manifests_everyEnvoyFilterPatch_parsesIntoEnvoysMessage() {
    List<DynamicTest> tests = new ArrayList<>();
    for (Path file : RepoFiles.yamlFilesUnder("manifests")) {
      List<Object> documents = EnvoyYaml.loadAll(file);
      for (int d = 0; d < documents.size(); d++) {
        if (!(documents.get(d) instanceof Map<?, ?> document)
            || !"EnvoyFilter".equals(document.get("kind"))) {
          continue;
        }
        List<?> patches = (List<?>) ((Map<?, ?>) document.get("spec")).get("configPatches");
        for (int p = 0; p < patches.size(); p++) {
          Map<?, ?> patch = (Map<?, ?>) patches.get(p);
          String applyTo = (String) patch.get("applyTo");
          Map<?, ?> operation = (Map<?, ?>) patch.get("patch");
          Object value = operation.get("value");
          boolean complete = !"MERGE".equals(operation.get("operation"));
          String name =
              RepoFiles.root().relativize(file)
                  + " doc "
                  + d
                  + " patch "
                  + p
                  + " ("
                  + applyTo
                  + ")";
          tests.add(
              DynamicTest.dynamicTest(name, () -> checkEnvoyFilterPatch(applyTo, value, complete)));
        }
      }
    }
    return tests.stream();
  }

  @Test
  void frontProxy_listeners_failOpenOnTenThousandAndFailClosedOnTenThousandOne() {
    Bootstrap bootstrap = frontProxy();
    RateLimit open = RateLimitFilterModel.of(bootstrap, "fail_open").filterConfig();
    RateLimit closed = RateLimitFilterModel.of(bootstrap, "fail_closed").filterConfig();

    assertThat(open.getFailureModeDeny()).isFalse();
    assertThat(closed.getFailureModeDeny()).isTrue();
    assertThat(listener(bootstrap, "fail_open").getAddress().getSocketAddress().getPortValue())
        .isEqualTo(10000);
    assertThat(listener(bootstrap, "fail_closed").getAddress().getSocketAddress().getPortValue())
        .isEqualTo(10001);
    for (RateLimit filter : List.of(open, closed)) {
      assertThat(filter.getDomain()).isEqualTo(EnvoyFlowIT.DOMAIN);
      assertThat(filter.getEnableXRatelimitHeaders())
          .isEqualTo(RateLimit.XRateLimitHeadersRFCVersion.DRAFT_VERSION_03);
      assertThat(filter.getTimeout().getNanos()).isEqualTo(100_000_000);
      assertThat(filter.getRateLimitedAsResourceExhausted()).isTrue();
    }
    assertThat(open.toBuilder().setFailureModeDeny(true).build())
        .as("the two filters differ only in failure_mode_deny")
        .isEqualTo(closed);
  }

  @Test
  void frontProxy_rateLimitCluster_isStrictDnsToThreeHealthCheckedWeirNodesOverHttp2WithASlowStart() {
    Cluster cluster = cluster(frontProxy(), "weir_ratelimit").orElseThrow();

    assertThat(cluster.getType()).isEqualTo(Cluster.DiscoveryType.STRICT_DNS);
    assertCallsOnlyServingNodes(cluster);
    assertThat(speaksHttp2(cluster)).isTrue();
    assertThat(cluster.getLoadAssignment().getEndpoints(0).getLbEndpointsList())
        .extracting(e -> e.getEndpoint().getAddress().getSocketAddress())
        .extracting(a -> a.getAddress() + ":" + a.getPortValue())
        .containsExactly("weir-1:1051", "weir-2:1051", "weir-3:1051");
    assertThat(cluster.getLbPolicy()).isEqualTo(Cluster.LbPolicy.ROUND_ROBIN);
    assertThat(cluster.getRoundRobinLbConfig().getSlowStartConfig().getSlowStartWindow().getSeconds())
        .as("a new node's share ramps up over 60 s")
        .isEqualTo(60);
  }

  /**
   * Asserts that {@code cluster} checks every node's gRPC health (service "", which a Weir node
   * reports SERVING only while ready) often enough that a warming or draining node gets no calls.
   */
  private static void assertCallsOnlyServingNodes(Cluster cluster) {
    assertThat(cluster.getHealthChecksList()).hasSize(1);
    HealthCheck check = cluster.getHealthChecks(0);
    assertThat(check.hasGrpcHealthCheck()).as("a gRPC health check").isTrue();
    assertThat(check.getGrpcHealthCheck().getServiceName()).as("the node's own health").isEmpty();
    assertThat(check.getInterval().getSeconds()).isBetween(1L, 5L);
    assertThat(check.getNoTrafficInterval().getSeconds())
        .as("checked while no call flows (Envoy's default: 60 s)")
        .isBetween(1L, 5L);
    assertThat(check.getHealthyThreshold().getValue()).isEqualTo(1);
  }

  @Test
  void frontProxy_scriptedRequests_produceExactlyTheCallsEnvoyFlowItSends() {
    for (RateLimitFilterModel listener : RateLimitFilterModel.all(frontProxy())) {
      for (EnvoyFlowIT.Step step : EnvoyFlowIT.SCRIPT) {
        Optional<RateLimitRequest> produced = listener.requestFor(step.request());
        assertThat(produced)
            .as("listener %s, route %s: %s", listener.listenerName(), step.route(), step.request())
            .isEqualTo(Optional.ofNullable(step.sent()));
      }
    }
  }

  @Test
  void frontProxy_everyDescriptorTheRoutesCanProduce_isLimitedByARuleOfWeirRateLimitYaml() {
    EnvoyConfig rules = weirRules(RepoFiles.frontProxyDescriptors());
    List<String> checked = new ArrayList<>();
    for (RateLimitFilterModel listener : RateLimitFilterModel.all(frontProxy())) {
      for (RateLimitFilterModel.RouteLimits limits : listener.allRouteLimits()) {
        for (RateLimitDescriptor descriptor : listener.representativeDescriptors(limits)) {
          String where =
              "listener "
                  + listener.listenerName()
                  + ", route "
                  + limits.route().getName()
                  + ", "
                  + descriptor.getEntriesList().stream()
                      .map(e -> e.getKey() + "=" + e.getValue())
                      .toList();
          assertThat(limitOf(rules, limits.domain(), descriptor))
              .as(where + ": matching rule")
              .isPresent();
          checked.add(where);
        }
      }
    }
    assertThat(checked)
        .as("descriptors the front proxy can produce")
        .hasSizeGreaterThanOrEqualTo(6);
  }

  @Test
  void compose_everyWeirNode_readsTheDescriptorFoldersMountedAsTheyAre() {
    Path compose = RepoFiles.root().resolve("envoy-config/docker-compose.yaml");
    Map<?, ?> services = (Map<?, ?>) ((Map<?, ?>) EnvoyYaml.load(compose)).get("services");
    List<String> checked = new ArrayList<>();
    for (Map.Entry<?, ?> service : services.entrySet()) {
      Map<?, ?> definition = (Map<?, ?>) service.getValue();
      Map<?, ?> env = (Map<?, ?>) definition.get("environment");
      if (env == null || env.get("WEIR_ENVOY_CONFIG") == null) {
        continue;
      }
      String containerPath = (String) env.get("WEIR_ENVOY_CONFIG");
      List<?> volumes = (List<?>) definition.get("volumes");
      List<Path> hostPaths =
          volumes.stream()
              .map(v -> ((String) v).split(":"))
              .filter(
                  parts ->
                      parts[1].equals(containerPath) || parts[1].startsWith(containerPath + "/"))
              .map(parts -> compose.getParent().resolve(parts[0]).normalize())
              .toList();
      assertThat(hostPaths)
          .as(
              service.getKey()
                  + ": the volumes mounted at or under WEIR_ENVOY_CONFIG="
                  + containerPath)
          .containsExactlyInAnyOrder(
              RepoFiles.frontProxyDescriptors(), RepoFiles.rlqsDescriptors());
      checked.add(service.getKey().toString());
    }
    assertThat(checked).containsExactlyInAnyOrder("weir-1", "weir-2", "weir-3");
    assertThat(weirRules(RepoFiles.frontProxyDescriptors()).domains())
        .containsOnlyKeys("weir-demo");
    assertThat(weirRules(RepoFiles.rlqsDescriptors()).domains()).containsOnlyKeys("weir-rlqs-demo");
  }

  @Test
  void compose_everyWeirNode_publishesItsHttpPortOnLoopbackAtItsOwnHostPort() throws IOException {
    Path compose = RepoFiles.root().resolve("envoy-config/docker-compose.yaml");
    Map<?, ?> services = (Map<?, ?>) ((Map<?, ?>) EnvoyYaml.load(compose)).get("services");
    Map<String, List<?>> published = new TreeMap<>();
    for (String node : List.of("weir-1", "weir-2", "weir-3")) {
      Map<?, ?> definition = (Map<?, ?>) services.get(node);
      Map<?, ?> env = (Map<?, ?>) definition.get("environment");
      assertThat(env.get("WEIR_HTTP_ADDRESS")).as(node).isEqualTo("0.0.0.0:1050");
      published.put(node, (List<?>) definition.get("ports"));
    }
    // The README queries each node's /metrics at these host ports.
    assertThat(published)
        .containsEntry("weir-1", List.of("127.0.0.1:1050:1050"))
        .containsEntry("weir-2", List.of("127.0.0.1:2050:1050"))
        .containsEntry("weir-3", List.of("127.0.0.1:3050:1050"));
    assertThat(Files.readString(RepoFiles.root().resolve("envoy-config/README.md")))
        .contains("for p in 1050 2050 3050; do curl -s http://127.0.0.1:$p/metrics");
  }

  /**
   * Envoy's admin interface answers unauthenticated POSTs ({@code /quitquitquit}, {@code
   * /runtime_modify}), so the compose file publishes it on this host's loopback only, as it does
   * the Weir nodes' HTTP ports.
   */
  @Test
  void compose_everyEnvoysAdminPort_isPublishedOnLoopbackOnly() {
    Path compose = RepoFiles.root().resolve("envoy-config/docker-compose.yaml");
    Map<?, ?> services = (Map<?, ?>) ((Map<?, ?>) EnvoyYaml.load(compose)).get("services");
    Map<String, List<String>> adminPublished = new TreeMap<>();
    for (Map.Entry<?, ?> service : services.entrySet()) {
      Map<?, ?> definition = (Map<?, ?>) service.getValue();
      if (!String.valueOf(definition.get("image")).startsWith("envoyproxy/envoy:")) {
        continue;
      }
      String bootstrap =
          ((List<?>) definition.get("volumes")).stream()
              .map(v -> ((String) v).split(":"))
              .filter(parts -> parts[1].equals("/etc/envoy/envoy.yaml"))
              .map(parts -> parts[0])
              .findFirst()
              .orElseThrow();
      Map<?, ?> envoy = (Map<?, ?>) EnvoyYaml.load(compose.getParent().resolve(bootstrap));
      Map<?, ?> address = (Map<?, ?>) ((Map<?, ?>) envoy.get("admin")).get("address");
      Object port = ((Map<?, ?>) address.get("socket_address")).get("port_value");
      adminPublished.put(
          service.getKey().toString(),
          ((List<?>) definition.get("ports")).stream()
              .map(String::valueOf)
              .filter(published -> published.endsWith(":" + port))
              .toList());
    }

    assertThat(adminPublished).containsOnlyKeys("envoy", "envoy-rlqs");
    assertThat(adminPublished)
        .allSatisfy(
            (service, ports) ->
                assertThat(ports)
                    .as(service + ": its admin port as published")
                    .isNotEmpty()
                    .allMatch(p -> p.startsWith("127.0.0.1:")));
  }

  @Test
  void weirRules_descriptorsOfTheScript_matchTheRulesTheScriptExpects() {
    EnvoyConfig rules = weirRules(RepoFiles.frontProxyDescriptors());
    for (EnvoyFlowIT.Step step : EnvoyFlowIT.SCRIPT) {
      if (step.sent() == null) {
        continue;
      }
      for (int i = 0; i < step.sent().getDescriptorsCount(); i++) {
        RateLimitDescriptor descriptor = step.sent().getDescriptors(i);
        EnvoyFlowIT.Expected expected = step.answer().statuses().get(i);
        if (descriptor.hasLimit()) {
          assertThat(expected.requestsPerUnit())
              .isEqualTo(descriptor.getLimit().getRequestsPerUnit());
          continue;
        }
        RateLimitRule rule = limitOf(rules, step.sent().getDomain(), descriptor).orElseThrow();
        assertThat(rule.name())
            .as(step.request() + " descriptor " + i + " rule")
            .isEqualTo(expected.name());
        assertThat(rule.requestsPerUnit())
            .as(expected.name() + " requests_per_unit")
            .isEqualTo(expected.requestsPerUnit());
        assertThat(rule.unit()).as(expected.name() + " unit").isEqualTo(expected.unit());
      }
    }
  }

  @Test
  void frontProxy_scriptedRequests_reachTheRoutesTheScriptNames() {
    RateLimitFilterModel model = RateLimitFilterModel.of(frontProxy(), "fail_open");
    List<String> routeNames =
        model.routes().getVirtualHostsList().stream()
            .flatMap(vh -> vh.getRoutesList().stream())
            .map(Route::getName)
            .toList();
    assertThat(EnvoyFlowIT.SCRIPT.stream().map(EnvoyFlowIT.Step::route).distinct())
        .as("every route of the front proxy is exercised by the script")
        .containsExactlyInAnyOrderElementsOf(routeNames);
  }

  @Test
  void containerBootstrap_adaptedFrontProxy_staysValidAndOnlyMovesUpstreamsAndTimeout() {
    Object shipped = EnvoyYaml.load(RepoFiles.frontProxyBootstrap());
    Bootstrap adapted =
        EnvoyYaml.parse(
            ContainerBootstrap.adapt(shipped, "host.testcontainers.internal", 41051, 48080),
            Bootstrap.newBuilder());
    Bootstrap original = EnvoyYaml.parse(shipped, Bootstrap.newBuilder());

    assertThat(endpoint(cluster(adapted, "weir_ratelimit").orElseThrow()))
        .isEqualTo("host.testcontainers.internal:41051");
    assertThat(endpoint(cluster(adapted, "echo").orElseThrow()))
        .isEqualTo("host.testcontainers.internal:48080");
    assertThat(speaksHttp2(cluster(adapted, "weir_ratelimit").orElseThrow())).isTrue();
    for (RateLimitFilterModel listener : RateLimitFilterModel.all(adapted)) {
      RateLimit config = listener.filterConfig();
      assertThat(config.getTimeout().getSeconds()).isEqualTo(2);
      RateLimit shippedConfig =
          RateLimitFilterModel.of(original, listener.listenerName()).filterConfig();
      assertThat(config.toBuilder().setTimeout(shippedConfig.getTimeout()).build())
          .isEqualTo(shippedConfig);
      assertThat(listener.routes())
          .isEqualTo(RateLimitFilterModel.of(original, listener.listenerName()).routes());
    }
  }

  @Test
  void rlqsBootstrap_everyBucketItsMatchersBuild_isLimitedByARuleOfWeirRlqsYaml() {
    EnvoyConfig rules = weirRules(RepoFiles.rlqsDescriptors());
    BucketPlanner planner =
        new BucketPlanner(
            new CounterKeys(InputLimits.DEFAULTS.maxDescriptorValueBytes()),
            InputLimits.DEFAULTS.maxDescriptorEntries());
    List<Map<String, String>> checked = new ArrayList<>();
    for (RlqsFilterModel quota : RlqsFilterModel.all(rlqsBootstrap())) {
      DomainConfig domain =
          rules
              .domain(quota.config().getDomain())
              .orElseThrow(() -> new AssertionError("no rules for " + quota.config().getDomain()));
      for (Map<String, String> bucket : quota.representativeBuckets()) {
        assertThat(planner.plan(domain, bucket))
            .as("bucket " + bucket)
            .isInstanceOf(BucketPlan.Limited.class);
        checked.add(bucket);
      }
    }
    assertThat(checked)
        .containsExactlyInAnyOrder(
            Map.of("api_key", RlqsFilterModel.SAMPLE, "name", "api"), Map.of("name", "anonymous"));
  }

  @Test
  void rlqsBootstrap_bucketPerClientValue_takesOnlyShortPrintableValues() {
    List<String> regexes = new ArrayList<>();
    for (RlqsFilterModel quota : RlqsFilterModel.all(rlqsBootstrap())) {
      for (com.github.xds.type.matcher.v3.Matcher.MatcherList.FieldMatcher field :
          quota.config().getBucketMatchers().getMatcherList().getMatchersList()) {
        regexes.add(
            field.getPredicate().getSinglePredicate().getValueMatch().getSafeRegex().getRegex());
      }
    }

    assertThat(regexes)
        .isNotEmpty()
        .allSatisfy(
            regex -> {
              java.util.regex.Pattern p = java.util.regex.Pattern.compile(regex);
              assertThat(p.matcher("k-alice").matches()).isTrue();
              // Not UTF-8: Envoy could never take an assignment back for such a bucket id.
              assertThat(p.matcher("k-\uFFFD").matches()).isFalse();
              assertThat(p.matcher("k-é").matches()).isFalse();
              assertThat(p.matcher("k".repeat(129)).matches()).isFalse();
            });
  }

  @Test
  void rlqsBootstrap_quotaServerIsStrictDnsToThreeHealthCheckedWeirNodesOverHttp2() {
    Cluster cluster = cluster(rlqsBootstrap(), "weir_rlqs").orElseThrow();

    assertThat(cluster.getType()).isEqualTo(Cluster.DiscoveryType.STRICT_DNS);
    assertCallsOnlyServingNodes(cluster);
    assertThat(speaksHttp2(cluster)).isTrue();
    assertThat(cluster.getLoadAssignment().getEndpoints(0).getLbEndpointsList())
        .extracting(e -> e.getEndpoint().getAddress().getSocketAddress())
        .extracting(a -> a.getAddress() + ":" + a.getPortValue())
        .containsExactly("weir-1:1051", "weir-2:1051", "weir-3:1051");
  }

  @Test
  void containerBootstrap_adaptedRlqsBootstrap_onlyMovesUpstreams() {
    Object shipped = EnvoyYaml.load(RepoFiles.rlqsBootstrap());
    Bootstrap adapted =
        EnvoyYaml.parse(
            ContainerBootstrap.adaptUpstreams(
                shipped,
                "host.testcontainers.internal",
                Map.of("weir_rlqs", 41051, ContainerBootstrap.ECHO_CLUSTER, 48080)),
            Bootstrap.newBuilder());
    Bootstrap original = EnvoyYaml.parse(shipped, Bootstrap.newBuilder());

    assertThat(endpoint(cluster(adapted, "weir_rlqs").orElseThrow()))
        .isEqualTo("host.testcontainers.internal:41051");
    assertThat(endpoint(cluster(adapted, "echo").orElseThrow()))
        .isEqualTo("host.testcontainers.internal:48080");
    assertThat(adapted.getStaticResources().getListenersList())
        .isEqualTo(original.getStaticResources().getListenersList());
  }

  @Test
  void parse_misspelledField_isRejectedWithItsName() {
    Object yaml = Map.of("static_resources", Map.of("clusterz", List.of()));

    assertThatThrownBy(() -> EnvoyYaml.parse(yaml, Bootstrap.newBuilder()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("clusterz");
  }

  @Test
  void parse_unknownFieldInsideTypedConfig_isRejectedWithItsName() {
    Object filter =
        Map.of(
            "name",
            "envoy.filters.http.ratelimit",
            "typed_config",
            Map.of(
                "@type", "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit",
                "domain", "weir-demo",
                "failure_mode_denied", true));

    assertThatThrownBy(() -> EnvoyYaml.parse(filter, HttpFilter.newBuilder()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("failure_mode_denied");
  }

  @Test
  void parse_typedConfigOfNoApiType_isRejectedWithTheUrl() {
    Object filter =
        Map.of(
            "name",
            "envoy.filters.http.ratelimit",
            "typed_config",
            Map.of(
                "@type",
                "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimitz"));

    assertThatThrownBy(() -> EnvoyYaml.parse(filter, HttpFilter.newBuilder()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("RateLimitz");
  }

  @Test
  void constraints_rateLimitFilterWithoutDomainOrService_areReported() {
    Object filter =
        Map.of(
            "name",
            "envoy.filters.http.ratelimit",
            "typed_config",
            Map.of(
                "@type",
                "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit",
                "stage",
                11));

    List<String> violations =
        EnvoyConstraints.violations(EnvoyYaml.parse(filter, HttpFilter.newBuilder()));

    assertThat(violations)
        .anySatisfy(
            v -> assertThat(v).contains("<RateLimit>.domain").contains("at least 1 character"))
        .anySatisfy(
            v -> assertThat(v).contains("<RateLimit>.rate_limit_service").contains("required"))
        .anySatisfy(v -> assertThat(v).contains("<RateLimit>.stage").contains("must be <= 10"));
  }

  private static void checkBootstrap(Path file, Bootstrap bootstrap) {
    assertThat(EnvoyConstraints.violations(bootstrap))
        .as(file + ": constraints Envoy enforces on load")
        .isEmpty();
    List<RateLimitFilterModel> listeners = RateLimitFilterModel.all(bootstrap);
    List<RlqsFilterModel> quotaFilters = RlqsFilterModel.all(bootstrap);
    assertThat(listeners.size() + quotaFilters.size())
        .as(
            file
                + ": listeners with "
                + RateLimitFilterModel.RATE_LIMIT_FILTER
                + " or "
                + RlqsFilterModel.RLQS_FILTER)
        .isPositive();
    for (RlqsFilterModel quota : quotaFilters) {
      checkQuotaFilter(file.getFileName() + " listener " + quota.listenerName(), quota, bootstrap);
    }
    for (RateLimitFilterModel listener : listeners) {
      String where = file.getFileName() + " listener " + listener.listenerName();
      RateLimit filter = listener.filterConfig();
      assertThat(filter.getDomain()).as(where + ": domain").isNotEmpty();
      checkRateLimitService(where, filter, bootstrap);
      for (RateLimitFilterModel.RouteLimits limits : listener.allRouteLimits()) {
        checkPlacement(where + " route " + limits.route().getName(), limits);
      }
    }
  }

  /**
   * An RLQS filter: a domain, a server that is an HTTP/2 cluster of the bootstrap, and bucket
   * settings that build a bucket id and report at Weir's default interval.
   */
  private static void checkQuotaFilter(String where, RlqsFilterModel quota, Bootstrap bootstrap) {
    RateLimitQuotaFilterConfig config = quota.config();
    assertThat(config.getDomain()).as(where + ": domain").isNotEmpty();
    String clusterName = config.getRlqsServer().getEnvoyGrpc().getClusterName();
    Optional<Cluster> cluster = cluster(bootstrap, clusterName);
    assertThat(cluster).as(where + ": rlqs_server cluster '" + clusterName + "'").isPresent();
    assertThat(speaksHttp2(cluster.get()))
        .as(where + ": cluster '" + clusterName + "' must speak HTTP/2 (gRPC)")
        .isTrue();
    assertThat(quota.bucketSettings()).as(where + ": bucket settings").isNotEmpty();
    for (RateLimitQuotaBucketSettings settings : quota.bucketSettings()) {
      assertThat(settings.getBucketIdBuilder().getBucketIdBuilderCount())
          .as(where + ": every bucket settings builds a bucket id (else nothing is reported)")
          .isPositive();
      assertThat(
              java.time.Duration.ofSeconds(
                  settings.getReportingInterval().getSeconds(),
                  settings.getReportingInterval().getNanos()))
          .as(where + ": reporting_interval, equal to WEIR_RLQS_REPORT_INTERVAL's default")
          .isEqualTo(RlqsSettings.DEFAULT_REPORT_INTERVAL);
    }
  }

  private static void checkRateLimitService(String where, RateLimit filter, Bootstrap bootstrap) {
    assertThat(filter.getRateLimitService().getTransportApiVersion())
        .as(where + ": rate_limit_service.transport_api_version")
        .isEqualTo(ApiVersion.V3);
    String clusterName =
        filter.getRateLimitService().getGrpcService().getEnvoyGrpc().getClusterName();
    assertThat(clusterName)
        .as(where + ": rate_limit_service.grpc_service.envoy_grpc.cluster_name")
        .isNotEmpty();
    Optional<Cluster> cluster = cluster(bootstrap, clusterName);
    assertThat(cluster)
        .as(where + ": cluster '" + clusterName + "' named by the rate-limit filter")
        .isPresent();
    assertThat(speaksHttp2(cluster.get()))
        .as(where + ": cluster '" + clusterName + "' must speak HTTP/2 (gRPC)")
        .isTrue();
  }

  /** Rate-limit features Envoy silently ignores in the wrong place (envoy-rls.md §1). */
  private static void checkPlacement(String where, RateLimitFilterModel.RouteLimits limits) {
    for (io.envoyproxy.envoy.config.route.v3.RateLimit limit : limits.limits()) {
      if (limits.perFilterConfig()) {
        assertThat(limit.hasLimit())
            .as(where + ": limit override is ignored in RateLimitPerRoute")
            .isFalse();
        assertThat(limit.hasStage())
            .as(where + ": stage is ignored in RateLimitPerRoute")
            .isFalse();
        assertThat(limit.getDisableKey())
            .as(where + ": disable_key is ignored in RateLimitPerRoute")
            .isEmpty();
      } else {
        assertThat(limit.hasHitsAddend())
            .as(
                where
                    + ": hits_addend is only honored in typed_per_filter_config RateLimitPerRoute")
            .isFalse();
      }
    }
  }

  private static void checkCompose(Path file, Map<?, ?> compose) {
    Map<?, ?> services = (Map<?, ?>) compose.get("services");
    assertThat(services.keySet().stream().map(Object::toString).toList())
        .as(file + " services")
        .contains("envoy", "weir-1", "weir-2", "weir-3", "echo");
    assertThat(((Map<?, ?>) services.get("envoy")).get("image"))
        .as(file + ": envoy image, the release EnvoyContainerIT tests")
        .isEqualTo(EnvoyImage.NAME);
    for (Map.Entry<?, ?> service : services.entrySet()) {
      Object image = ((Map<?, ?>) service.getValue()).get("image");
      if (image != null) {
        assertThat((String) image)
            .as(file + ": image of " + service.getKey() + " is pinned")
            .contains(":")
            .doesNotEndWith(":latest");
      }
    }
  }

  /**
   * A MERGE patch is a fragment, so only fields and types are checked; other patches must be
   * complete.
   */
  private static void checkEnvoyFilterPatch(String applyTo, Object value, boolean complete) {
    Message.Builder target =
        switch (applyTo) {
          case "HTTP_FILTER" -> HttpFilter.newBuilder();
          case "NETWORK_FILTER" -> Filter.newBuilder();
          case "FILTER_CHAIN" -> FilterChain.newBuilder();
          case "LISTENER" -> Listener.newBuilder();
          case "CLUSTER" -> Cluster.newBuilder();
          case "ROUTE_CONFIGURATION" -> RouteConfiguration.newBuilder();
          case "VIRTUAL_HOST" -> VirtualHost.newBuilder();
          case "HTTP_ROUTE" -> Route.newBuilder();
          default -> throw new AssertionError("EnvoyFilter applyTo " + applyTo + " is not checked");
        };
    Message message = EnvoyYaml.parse(value, target);
    if (complete) {
      assertThat(EnvoyConstraints.violations(message))
          .as("constraints Envoy enforces on load")
          .isEmpty();
    }
    if (message instanceof HttpFilter filter
        && filter.getName().equals(RateLimitFilterModel.RATE_LIMIT_FILTER)) {
      RateLimit config = RateLimitFilterModel.unpack(filter.getTypedConfig(), RateLimit.class);
      assertThat(config.getDomain()).as("EnvoyFilter rate-limit domain").isNotEmpty();
      assertThat(config.getRateLimitService().getTransportApiVersion()).isEqualTo(ApiVersion.V3);
    }
    if (message instanceof Cluster cluster) {
      assertThat(speaksHttp2(cluster))
          .as("EnvoyFilter cluster " + cluster.getName() + " speaks HTTP/2")
          .isTrue();
    }
  }

  @SuppressWarnings("deprecation")
  static boolean speaksHttp2(Cluster cluster) {
    Any options = cluster.getTypedExtensionProtocolOptionsMap().get(HTTP_PROTOCOL_OPTIONS);
    if (options != null) {
      HttpProtocolOptions http = RateLimitFilterModel.unpack(options, HttpProtocolOptions.class);
      return http.getExplicitHttpConfig().hasHttp2ProtocolOptions();
    }
    return cluster.hasHttp2ProtocolOptions();
  }

  private static EnvoyConfig weirRules(Path file) {
    try {
      return new ConfigLoader(ConfigLoadOptions.DEFAULTS).load(file);
    } catch (DescriptorConfigException e) {
      throw new AssertionError(
          file + " is not a valid Weir descriptor config: " + e.getMessage(), e);
    }
  }

  private static Optional<RateLimitRule> limitOf(
      EnvoyConfig rules, String domain, RateLimitDescriptor descriptor) {
    DomainConfig config =
        rules
            .domain(domain)
            .orElseThrow(() -> new AssertionError("no rules for domain '" + domain + "'"));
    List<Entry> entries =
        descriptor.getEntriesList().stream().map(e -> new Entry(e.getKey(), e.getValue())).toList();
    return DescriptorMatcher.match(config.root(), entries).map(Match::rule);
  }

  private static Bootstrap rlqsBootstrap() {
    return EnvoyYaml.parse(EnvoyYaml.load(RepoFiles.rlqsBootstrap()), Bootstrap.newBuilder());
  }

  private static Bootstrap frontProxy() {
    return EnvoyYaml.parse(EnvoyYaml.load(RepoFiles.frontProxyBootstrap()), Bootstrap.newBuilder());
  }

  private static Optional<Cluster> cluster(Bootstrap bootstrap, String name) {
    return bootstrap.getStaticResources().getClustersList().stream()
        .filter(cluster -> cluster.getName().equals(name))
        .findFirst();
  }

  private static Listener listener(Bootstrap bootstrap, String name) {
    return bootstrap.getStaticResources().getListenersList().stream()
        .filter(listener -> listener.getName().equals(name))
        .findFirst()
        .orElseThrow();
  }

  private static String endpoint(Cluster cluster) {
    var address =
        cluster.getLoadAssignment().getEndpoints(0).getLbEndpoints(0).getEndpoint().getAddress();
    return address.getSocketAddress().getAddress()
        + ":"
        + address.getSocketAddress().getPortValue();
  }
}
