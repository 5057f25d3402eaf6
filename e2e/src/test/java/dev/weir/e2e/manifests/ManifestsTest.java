package dev.weir.e2e.manifests;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.util.JsonFormat;
import dev.weir.e2e.manifests.Manifests.Document;
import dev.weir.envoy.config.ConfigLoadOptions;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.helm.UnknownFields;
import dev.weir.server.PrometheusEndpoint;
import io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.envoyproxy.envoy.extensions.filters.http.ratelimit.v3.RateLimit;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter;
import io.fabric8.istio.api.api.networking.v1alpha3.EnvoyFilterEnvoyConfigObjectPatch;
import io.fabric8.istio.api.api.networking.v1alpha3.LoadBalancerSettings;
import io.fabric8.istio.api.api.networking.v1alpha3.LoadBalancerSettingsSimple;
import io.fabric8.istio.api.networking.v1alpha3.EnvoyFilter;
import io.fabric8.istio.api.networking.v1beta1.DestinationRule;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.openshift.api.model.monitoring.v1.PodMonitor;
import io.fabric8.openshift.api.model.monitoring.v1.ServiceMonitor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Static checks of {@code manifests/} against fabric8's Kubernetes and Istio models and Envoy's protos. */
@EnableKubernetesMockClient(crud = true)
class ManifestsTest {
  private static final Path BASE = Manifests.ROOT.resolve("base");
  private static final Pattern WEIR_LITERAL = Pattern.compile("\"(WEIR_[A-Z0-9_]+)\"");
  private static final Pattern DOC_ROW = Pattern.compile("(?m)^\\|\\s*`(WEIR_[A-Z0-9_]+)`");

  KubernetesClient client;

  @Test
  void everyDocument_loadsIntoTypedModel_withoutUnknownFields() throws IOException {
    List<String> problems = new ArrayList<>();
    int count = 0;
    for (Path file : Manifests.resourceFiles()) {
      for (Document doc : Manifests.documents(file)) {
        count++;
        if (doc.object() instanceof GenericKubernetesResource) {
          problems.add(file + ": kind " + doc.object().getKind() + " has no typed model");
        }
        UnknownFields.in(doc.object())
            .forEach(u -> problems.add(file + ": unknown field " + u));
      }
    }
    assertThat(count).isGreaterThanOrEqualTo(12);
    assertThat(problems).isEmpty();
  }

  @Test
  void unknownFields_misspelledField_isFound() {
    HasMetadata svc =
        Serialization.unmarshal(
            "apiVersion: v1\n"
                + "kind: Service\n"
                + "metadata: {name: x}\n"
                + "spec: {ports: [{port: 1, targetPrt: 2}]}\n",
            HasMetadata.class);

    assertThat(UnknownFields.in(svc)).containsExactly("Service.Spec.Ports[0]: [targetPrt]");
  }

  @Test
  void kustomizations_resourcesResolve_andEveryFileIsUsed() throws IOException {
    Set<Path> used = new TreeSet<>();
    for (Path k : Manifests.kustomizations()) {
      for (Object entry : Manifests.resources(k)) {
        Path target = k.getParent().resolve(entry.toString()).normalize();
        assertThat(
                Files.isRegularFile(target)
                    || Files.isRegularFile(target.resolve("kustomization.yaml")))
            .as("%s references %s", k, entry)
            .isTrue();
        used.add(target);
      }
    }
    assertThat(used).containsAll(Manifests.resourceFiles());
  }

  /**
   * {@code kustomize edit} changes the kustomization file of the directory it runs in, so each
   * command of the README first changes to a directory that has one.
   */
  @Test
  void readme_kustomizeEditCommands_runInAKustomizationDirectory() throws IOException {
    String readme = Files.readString(Manifests.ROOT.resolve("README.md"));
    Matcher edits = Pattern.compile("(?:cd (\\S+) && )?kustomize edit").matcher(readme);
    List<String> problems = new ArrayList<>();
    int count = 0;
    while (edits.find()) {
      count++;
      String dir = edits.group(1);
      Path repo = Manifests.ROOT.getParent();
      if (dir == null || !Files.isRegularFile(repo.resolve(dir).resolve("kustomization.yaml"))) {
        problems.add(edits.group() + " (from the repository's root)");
      }
    }

    assertThat(count).isPositive();
    assertThat(problems).isEmpty();
  }

  @Test
  void deployment_setsOnlyVariablesTheServerReads() throws IOException {
    Set<String> known = knownVariables();
    Container weir = deployment().getSpec().getTemplate().getSpec().getContainers().get(0);
    List<String> set =
        weir.getEnv().stream().map(EnvVar::getName).filter(n -> n.startsWith("WEIR_")).toList();

    assertThat(set).contains("WEIR_PEER_DISCOVERY_TYPE", "WEIR_K8S_POD_IP", "WEIR_ENVOY_CONFIG");
    assertThat(known).containsAll(set);
  }

  /**
   * The kubelet's service links would give each pod {@code WEIR_SERVICE_HOST}, {@code
   * WEIR_PORT_8081_TCP} and the like for Service {@code weir}: variables no setting reads, each a
   * warning at start.
   */
  @Test
  void deployment_withoutServiceLinks() throws IOException {
    assertThat(deployment().getSpec().getTemplate().getSpec().getEnableServiceLinks()).isFalse();
  }

  @Test
  void deployment_probesPortsAndConfigMountMatchTheServer() throws IOException {
    Deployment d = deployment();
    Container weir = d.getSpec().getTemplate().getSpec().getContainers().get(0);
    Map<String, String> env = new HashMap<>();
    weir.getEnv().stream().filter(e -> e.getValue() != null).forEach(e -> env.put(e.getName(), e.getValue()));

    assertThat(d.getSpec().getReplicas()).isEqualTo(3);
    assertThat(weir.getLivenessProbe().getHttpGet().getPath()).isEqualTo("/v1/LiveCheck");
    assertThat(weir.getStartupProbe().getHttpGet().getPath()).isEqualTo("/v1/LiveCheck");
    assertThat(
            weir.getStartupProbe().getPeriodSeconds()
                * weir.getStartupProbe().getFailureThreshold())
        .as("seconds a starting pod has: the largest WEIR_WARMUP (120 s) and the JVM's start")
        .isGreaterThanOrEqualTo(150);
    assertThat(weir.getReadinessProbe().getHttpGet().getPath()).isEqualTo("/readyz");
    assertThat(weir.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();
    assertThat(d.getSpec().getTemplate().getSpec().getSecurityContext().getRunAsNonRoot()).isTrue();
    assertThat(env)
        .containsEntry("WEIR_GRPC_ADDRESS", "0.0.0.0:1051")
        .containsEntry("WEIR_HTTP_ADDRESS", "0.0.0.0:1050");
    assertThat(weir.getPorts())
        .anyMatch(p -> p.getName().equals("grpc") && p.getContainerPort() == 1051);
    assertThat(weir.getPorts())
        .anyMatch(p -> p.getName().equals("http") && p.getContainerPort() == 1050);
    assertThat(weir.getVolumeMounts())
        .anyMatch(
            m -> m.getMountPath().equals(env.get("WEIR_ENVOY_CONFIG")) && m.getSubPath() == null);
    EnvVar podIp =
        weir.getEnv().stream()
            .filter(e -> e.getName().equals("WEIR_K8S_POD_IP"))
            .findFirst()
            .orElseThrow();
    assertThat(podIp.getValueFrom().getFieldRef().getFieldPath()).isEqualTo("status.podIP");
  }

  @Test
  void deployment_peerListenerOnItsOwnPortWithTheSecretMounted() throws IOException {
    Deployment d = deployment();
    Container weir = d.getSpec().getTemplate().getSpec().getContainers().get(0);
    Map<String, String> env = new HashMap<>();
    weir.getEnv().stream()
        .filter(e -> e.getValue() != null)
        .forEach(e -> env.put(e.getName(), e.getValue()));
    Path secretFile = Path.of(env.get("WEIR_PEER_SECRET_FILE"));
    VolumeMount mount =
        weir.getVolumeMounts().stream()
            .filter(m -> secretFile.getParent().equals(Path.of(m.getMountPath())))
            .findFirst()
            .orElseThrow();
    Volume volume =
        d.getSpec().getTemplate().getSpec().getVolumes().stream()
            .filter(v -> v.getName().equals(mount.getName()))
            .findFirst()
            .orElseThrow();

    assertThat(env)
        .containsEntry("WEIR_PEER_ADDRESS", "0.0.0.0:1052")
        .doesNotContainKey("WEIR_PEER_INSECURE");
    assertThat(weir.getPorts())
        .anyMatch(p -> p.getName().equals("peer") && p.getContainerPort() == 1052);
    assertThat(volume.getSecret().getSecretName()).isEqualTo("weir-peer-secret");
    assertThat(volume.getSecret().getItems()).isNullOrEmpty();
    assertThat(secretFile.getFileName().toString()).isEqualTo("secret");
    assertThat(Files.readString(Manifests.ROOT.resolve("README.md")))
        .contains("create secret generic weir-peer-secret --from-literal=secret=");
  }

  @Test
  void networkPolicy_onlyWeirPodsReachThePeerPort_anyoneTheClientPorts() throws IOException {
    NetworkPolicy policy = only(NetworkPolicy.class);
    Deployment d = deployment();
    Map<String, String> podLabels = d.getSpec().getTemplate().getMetadata().getLabels();
    Map<String, Integer> containerPorts =
        d.getSpec().getTemplate().getSpec().getContainers().get(0).getPorts().stream()
            .collect(Collectors.toMap(ContainerPort::getName, ContainerPort::getContainerPort));
    Map<String, List<NetworkPolicyPeer>> sourcesByPort = new HashMap<>();
    for (NetworkPolicyIngressRule rule : policy.getSpec().getIngress()) {
      for (NetworkPolicyPort port : rule.getPorts()) {
        assertThat(containerPorts).containsKey(port.getPort().getStrVal());
        sourcesByPort
            .computeIfAbsent(port.getPort().getStrVal(), k -> new ArrayList<>())
            .addAll(rule.getFrom() == null ? List.of() : rule.getFrom());
      }
    }

    assertThat(policy.getSpec().getPolicyTypes()).containsExactly("Ingress");
    assertThat(podLabels).containsAllEntriesOf(policy.getSpec().getPodSelector().getMatchLabels());
    assertThat(sourcesByPort).containsOnlyKeys("peer", "grpc", "http");
    assertThat(sourcesByPort.get("grpc")).as("open to every client").isEmpty();
    assertThat(sourcesByPort.get("http")).as("open to every client").isEmpty();
    assertThat(sourcesByPort.get("peer"))
        .singleElement()
        .satisfies(
            from -> {
              assertThat(from.getIpBlock()).isNull();
              assertThat(from.getNamespaceSelector()).isNull();
              assertThat(podLabels).containsAllEntriesOf(from.getPodSelector().getMatchLabels());
            });
    assertThat(policy.getSpec().getIngress())
        .filteredOn(
            rule -> rule.getPorts().stream().anyMatch(p -> p.getPort().getStrVal().equals("peer")))
        .allSatisfy(rule -> assertThat(rule.getPorts()).hasSize(1));
  }

  @Test
  void services_peersPointAtThePeerPort() throws IOException {
    for (String name : List.of("weir-peers", "weir-peers-dns")) {
      Service service =
          Manifests.build(BASE).stream()
              .map(Document::object)
              .filter(o -> o instanceof Service && o.getMetadata().getName().equals(name))
              .map(Service.class::cast)
              .findFirst()
              .orElseThrow();

      assertThat(service.getSpec().getPorts())
          .singleElement()
          .satisfies(p -> assertThat(p.getTargetPort().getStrVal()).isEqualTo("peer"));
    }
  }

  @Test
  void role_grantsExactlyWhatKubernetesDiscoveryCalls_toTheDeploymentsAccount() throws IOException {
    Role role = only(Role.class);
    Map<String, Set<String>> grants = new HashMap<>();
    for (PolicyRule rule : role.getRules()) {
      for (String group : rule.getApiGroups()) {
        for (String resource : rule.getResources()) {
          grants
              .computeIfAbsent(group + "/" + resource, k -> new TreeSet<>())
              .addAll(rule.getVerbs());
        }
      }
    }
    RoleBinding binding = only(RoleBinding.class);

    String mechanism =
        deployment().getSpec().getTemplate().getSpec().getContainers().get(0).getEnv().stream()
            .filter(e -> e.getName().equals("WEIR_K8S_WATCH_MECHANISM"))
            .map(EnvVar::getValue)
            .findFirst()
            .orElse("endpointslices");

    assertThat(mechanism).as("the mechanism the base's pods use").isEqualTo("endpointslices");
    assertThat(grants)
        .as("list and watch on what that mechanism watches, nothing else (no pods)")
        .isEqualTo(Map.of("discovery.k8s.io/endpointslices", Set.of("list", "watch")));
    assertThat(binding.getRoleRef().getName()).isEqualTo(role.getMetadata().getName());
    assertThat(binding.getSubjects().get(0).getName())
        .isEqualTo(deployment().getSpec().getTemplate().getSpec().getServiceAccountName());
  }

  /**
   * The README's way to move Weir to another namespace: change {@code namespace:} in the base's
   * kustomization. Kustomize then sets every object's namespace but, in its default {@code
   * defaultOnly} mode, the namespace of no RoleBinding subject unless it is named {@code default};
   * a subject that names {@code weir} keeps binding an account that no longer exists there.
   */
  @Test
  void roleBinding_inAnotherNamespace_stillBindsTheDeploymentsAccount() throws IOException {
    String namespace = "limits";
    RoleBinding binding = only(RoleBinding.class);
    binding.getMetadata().setNamespace(namespace);
    binding.getSubjects().stream()
        .filter(s -> s.getName().equals("default"))
        .forEach(s -> s.setNamespace(namespace));

    assertThat(binding.getSubjects())
        .singleElement()
        .satisfies(
            subject -> {
              assertThat(subject.getKind()).isEqualTo("ServiceAccount");
              String resolved =
                  subject.getNamespace() == null || subject.getNamespace().isEmpty()
                      ? binding.getMetadata().getNamespace()
                      : subject.getNamespace();
              assertThat(resolved)
                  .as("the namespace RBAC reads the subject in (empty: the binding's own)")
                  .isEqualTo(namespace);
            });
  }

  @Test
  void services_peersHeadlessAndRlsPortsNamedForIstio() throws IOException {
    Map<String, Service> services =
        Manifests.build(BASE).stream()
            .filter(d -> d.object() instanceof Service)
            .map(d -> (Service) d.object())
            .collect(Collectors.toMap(s -> s.getMetadata().getName(), s -> s));
    Service peers = services.get("weir-peers");
    Service weir = services.get("weir");
    ServicePort rls =
        weir.getSpec().getPorts().stream()
            .filter(p -> p.getName().equals("grpc-rls"))
            .findFirst()
            .orElseThrow();
    ServicePort http =
        weir.getSpec().getPorts().stream()
            .filter(p -> p.getName().equals("http"))
            .findFirst()
            .orElseThrow();

    assertThat(peers.getSpec().getClusterIP()).isEqualTo("None");
    assertThat(rls.getPort()).isEqualTo(8081);
    assertThat(rls.getAppProtocol()).isEqualTo("grpc");
    assertThat(rls.getTargetPort().getStrVal()).isEqualTo("grpc");
    assertThat(http.getPort()).isEqualTo(8080);
    assertThat(http.getTargetPort().getStrVal()).isEqualTo("http");
    String serviceName =
        deployment().getSpec().getTemplate().getSpec().getContainers().get(0).getEnv().stream()
            .filter(e -> e.getName().equals("WEIR_K8S_SERVICE_NAME"))
            .findFirst()
            .orElseThrow()
            .getValue();
    assertThat(serviceName).isEqualTo(peers.getMetadata().getName());
  }

  @Test
  void services_dnsPeersPublishNotReadyPods_kubernetesPeersOnlyReadyOnes() throws IOException {
    Map<String, Service> services =
        Manifests.build(BASE).stream()
            .filter(d -> d.object() instanceof Service)
            .map(d -> (Service) d.object())
            .collect(Collectors.toMap(s -> s.getMetadata().getName(), s -> s));
    Service peers = services.get("weir-peers");
    Service dns = services.get("weir-peers-dns");
    String fqdn =
        dns.getMetadata().getName() + "." + dns.getMetadata().getNamespace() + ".svc.cluster.local";

    assertThat(dns.getSpec().getClusterIP()).isEqualTo("None");
    assertThat(dns.getSpec().getPublishNotReadyAddresses()).isTrue();
    assertThat(dns.getSpec().getSelector()).isEqualTo(peers.getSpec().getSelector());
    assertThat(dns.getSpec().getPorts()).isEqualTo(peers.getSpec().getPorts());
    assertThat(peers.getSpec().getPublishNotReadyAddresses()).isNotEqualTo(Boolean.TRUE);
    assertThat(Files.readString(Manifests.ROOT.getParent().resolve("docs/discovery.md")))
        .contains(fqdn);
    assertThat(Files.readString(Manifests.ROOT.resolve("README.md"))).contains(fqdn);
  }

  @Test
  void configMap_holdsARatelimitDomainConfig() throws IOException {
    ConfigMap config = only(ConfigMap.class);
    Map<?, ?> yaml = Serialization.unmarshal(config.getData().get("config.yaml"), Map.class);

    assertThat(yaml.get("domain")).isEqualTo("ratelimit");
    assertThat((List<?>) yaml.get("descriptors")).hasSize(3);
  }

  @Test
  void configMap_mountedAsTheKubeletMountsIt_loadsWithTheDomainTheEnvoyFiltersAsk(@TempDir Path mount) throws Exception {
    ConfigMap config = only(ConfigMap.class);
    Path version = Files.createDirectories(mount.resolve("..2026_11_30_10_00_00.1"));
    Files.createSymbolicLink(mount.resolve("..data"), version.getFileName());
    for (Map.Entry<String, String> file : config.getData().entrySet()) {
      Files.writeString(version.resolve(file.getKey()), file.getValue());
      Files.createSymbolicLink(mount.resolve(file.getKey()), Path.of("..data", file.getKey()));
    }

    EnvoyConfig loaded = new ConfigLoader(ConfigLoadOptions.DEFAULTS).load(mount);

    assertThat(loaded.domains()).containsOnlyKeys("ratelimit");
  }

  @Test
  void envoyFilters_parseIntoEnvoysProtos_andCallWeirsRlsPort() throws Exception {
    JsonFormat.TypeRegistry types = JsonFormat.TypeRegistry.newBuilder().add(RateLimit.getDescriptor()).build();
    JsonFormat.Parser parser = JsonFormat.parser().usingTypeRegistry(types);
    int filters = 0;
    int vhosts = 0;
    List<Document> docs =
        new ArrayList<>(Manifests.build(Manifests.ROOT.resolve("overlays/istio")));
    docs.addAll(Manifests.build(Manifests.ROOT.resolve("overlays/istio/sidecar")));
    for (Document doc : docs) {
      if (!(doc.object() instanceof EnvoyFilter ef)) {
        continue;
      }
      for (EnvoyFilterEnvoyConfigObjectPatch patch : ef.getSpec().getConfigPatches()) {
        String json = Serialization.asJson(patch.getPatch().getValue());
        switch (patch.getApplyTo().name()) {
          case "HTTP_FILTER" -> {
            HttpFilter.Builder filter = HttpFilter.newBuilder();
            parser.merge(json, filter);
            RateLimit rl = filter.getTypedConfig().unpack(RateLimit.class);
            assertThat(filter.getName()).isEqualTo("envoy.filters.http.ratelimit");
            assertThat(rl.getDomain()).isEqualTo("ratelimit");
            assertThat(rl.getRateLimitService().getGrpcService().getEnvoyGrpc().getClusterName())
                .isEqualTo(RLS_CLUSTER);
            filters++;
          }
          case "VIRTUAL_HOST" -> {
            VirtualHost.Builder vhost = VirtualHost.newBuilder();
            parser.merge(json, vhost);
            assertThat(vhost.getRateLimitsList()).isNotEmpty();
            vhosts++;
          }
          default -> throw new AssertionError("unexpected patch " + patch.getApplyTo());
        }
      }
    }
    assertThat(filters).isEqualTo(2);
    assertThat(vhosts).isEqualTo(2);
  }

  /**
   * The gateway's {@code (PATH=api)} descriptor is sent for {@code /api/v1/products/<1-99>}, as the
   * vhost patch and the README say: Envoy's {@code safe_regex} must match the whole path.
   */
  @Test
  void gatewayVhost_apiDescriptor_sentForEveryProductFrom1To99() throws Exception {
    EnvoyFilter filter =
        Manifests.build(Manifests.ROOT.resolve("overlays/istio")).stream()
            .map(Document::object)
            .filter(o -> o instanceof EnvoyFilter)
            .map(EnvoyFilter.class::cast)
            .filter(f -> f.getMetadata().getName().equals("weir-ratelimit-vhost"))
            .findFirst()
            .orElseThrow();
    Object patch = filter.getSpec().getConfigPatches().get(0).getPatch().getValue();
    VirtualHost.Builder vhost = VirtualHost.newBuilder();
    JsonFormat.parser().merge(Serialization.asJson(patch), vhost);
    List<String> regexes =
        vhost.getRateLimitsList().stream()
            .flatMap(limit -> limit.getActionsList().stream())
            .filter(a -> a.getHeaderValueMatch().getDescriptorValue().equals("api"))
            .map(a -> a.getHeaderValueMatch().getHeaders(0).getStringMatch())
            .map(match -> match.getSafeRegex().getRegex())
            .toList();

    assertThat(regexes).hasSize(1);
    Pattern api = Pattern.compile(regexes.get(0));
    List<String> missed = new ArrayList<>();
    for (int product = 1; product <= 99; product++) {
      if (!api.matcher("/api/v1/products/" + product).matches()) {
        missed.add("/api/v1/products/" + product);
      }
    }
    assertThat(missed).as("paths sent without (PATH=api)").isEmpty();
    assertThat(api.matcher("/api/v1/products/0").matches()).isFalse();
    assertThat(api.matcher("/api/v1/products/100").matches()).isFalse();
  }

  /** The cluster Istio makes for the weir Service's grpc-rls port, which the EnvoyFilters call. */
  private static final String RLS_CLUSTER = "outbound|8081||weir.weir.svc.cluster.local";

  /**
   * Both Istio variants warm new Weir pods up on the cluster the EnvoyFilters call. Read through the
   * typed model's getters: fabric8 drops an unknown field of an Istio load balancer silently, so
   * {@link #everyDocument_loadsIntoTypedModel_withoutUnknownFields} cannot see a misspelling there.
   */
  @Test
  void istioOverlays_newWeirPodsWarmUpOnTheClusterTheEnvoyFiltersCall() throws IOException {
    for (String overlay : List.of("overlays/istio", "overlays/istio/sidecar")) {
      List<DestinationRule> rules =
          Manifests.build(Manifests.ROOT.resolve(overlay)).stream()
              .map(Document::object)
              .filter(DestinationRule.class::isInstance)
              .map(DestinationRule.class::cast)
              .toList();

      assertThat(rules).as(overlay).hasSize(1);
      DestinationRule rule = rules.get(0);
      assertThat(RLS_CLUSTER).endsWith("||" + rule.getSpec().getHost());
      assertThat(rule.getMetadata().getNamespace()).isEqualTo("weir");
      assertThat(rule.getSpec().getExportTo()).containsExactly("*");
      LoadBalancerSettings balancer = rule.getSpec().getTrafficPolicy().getLoadBalancer();
      assertThat(balancer.getLbPolicy())
          .isInstanceOfSatisfying(
              LoadBalancerSettingsSimple.class,
              simple -> assertThat(simple.getSimple().name()).isEqualTo("LEAST_REQUEST"));
      assertThat(balancer.getWarmupDurationSecs()).isEqualTo("60s");
    }
  }

  @Test
  void base_appliesToApiServer() throws IOException {
    for (Document doc : Manifests.build(BASE)) {
      client.resource(doc.object()).create();
    }

    assertThat(client.apps().deployments().inNamespace("weir").withName("weir").get()).isNotNull();
    assertThat(client.services().inNamespace("weir").list().getItems()).hasSize(3);
    assertThat(client.rbac().roles().inNamespace("weir").withName("weir-discovery").get())
        .isNotNull();
    assertThat(
            client.policy().v1().podDisruptionBudget().inNamespace("weir").withName("weir").get())
        .isNotNull();
    assertThat(client.configMaps().inNamespace("weir").withName("weir-config").get()).isNotNull();
    assertThat(client.network().v1().networkPolicies().inNamespace("weir").withName("weir").get())
        .isNotNull();
  }

  /**
   * A monitor without a namespace selector scrapes its own namespace, which follows a kustomize
   * {@code namespace:} over these manifests; {@code matchNames: [weir]} would not, and a Weir
   * installed in another namespace would never be scraped.
   */
  @Test
  void monitoring_monitorsNameNoNamespace_theyScrapeTheirOwn() throws IOException {
    List<Document> docs = new ArrayList<>(Manifests.build(Manifests.ROOT.resolve("monitoring")));
    docs.addAll(Manifests.build(Manifests.ROOT.resolve("monitoring/podmonitor")));
    List<Object> selectors = new ArrayList<>();
    for (Document doc : docs) {
      if (doc.object() instanceof ServiceMonitor sm) {
        selectors.add(sm.getSpec().getNamespaceSelector());
      } else if (doc.object() instanceof PodMonitor pm) {
        selectors.add(pm.getSpec().getNamespaceSelector());
      }
    }

    assertThat(selectors).hasSize(2).containsOnlyNulls();
  }

  @Test
  void monitoring_serviceAndPodMonitorsScrapeTheHttpPortsMetricsPath() throws IOException {
    List<Document> docs = new ArrayList<>(Manifests.build(Manifests.ROOT.resolve("monitoring")));
    docs.addAll(Manifests.build(Manifests.ROOT.resolve("monitoring/podmonitor")));
    ServiceMonitor serviceMonitor =
        docs.stream().map(Document::object).filter(ServiceMonitor.class::isInstance)
            .map(ServiceMonitor.class::cast).findFirst().orElseThrow();
    PodMonitor podMonitor =
        docs.stream().map(Document::object).filter(PodMonitor.class::isInstance)
            .map(PodMonitor.class::cast).findFirst().orElseThrow();
    Map<String, String> podLabels = deployment().getSpec().getTemplate().getMetadata().getLabels();

    assertThat(serviceMonitor.getSpec().getEndpoints().get(0).getPort()).isEqualTo("http");
    assertThat(serviceMonitor.getSpec().getEndpoints().get(0).getPath()).isEqualTo(PrometheusEndpoint.PATH);
    assertThat(podMonitor.getSpec().getPodMetricsEndpoints().get(0).getPort()).isEqualTo("http");
    assertThat(podMonitor.getSpec().getPodMetricsEndpoints().get(0).getPath()).isEqualTo(PrometheusEndpoint.PATH);
    assertThat(podLabels).containsAllEntriesOf(podMonitor.getSpec().getSelector().getMatchLabels());
  }

  @Test
  void dashboard_isValidJson_withItsPanels() throws Exception {
    Path json = Manifests.ROOT.resolve("monitoring/dashboard/weir-dashboard.json");
    Map<?, ?> dashboard = Serialization.unmarshal(Files.readString(json), Map.class);

    // Each query's metrics, labels and types are checked against a live node's /metrics by
    // service/server's DashboardMetricsTest.
    assertThat((List<?>) dashboard.get("panels")).hasSizeGreaterThan(20);
  }

  @Test
  void dashboard_panelsNamingTheOverLimitRuleCap_sayItCapsEachSource() throws Exception {
    Path json = Manifests.ROOT.resolve("monitoring/dashboard/weir-dashboard.json");
    Map<?, ?> dashboard = Serialization.unmarshal(Files.readString(json), Map.class);
    List<String> naming = new ArrayList<>();
    for (Object panel : (List<?>) dashboard.get("panels")) {
      String description = String.valueOf(((Map<?, ?>) panel).get("description"));
      if (description.contains("WEIR_OVER_LIMIT_METRIC_RULES")) {
        naming.add(description);
      }
    }

    assertThat(naming)
        .as("the cap holds for envoy and native each, each with its own rule=\"_other\"")
        .isNotEmpty()
        .allSatisfy(d -> assertThat(d).contains("per source"));
  }

  @Test
  void dashboard_noTargetJoinsTwoSumsByTheSameLabelsWithOr() throws Exception {
    Path json = Manifests.ROOT.resolve("monitoring/dashboard/weir-dashboard.json");
    Map<?, ?> dashboard = Serialization.unmarshal(Files.readString(json), Map.class);
    List<String> hidden = new ArrayList<>();
    for (Object panel : (List<?>) dashboard.get("panels")) {
      Object targets = ((Map<?, ?>) panel).get("targets");
      for (Object target : targets == null ? List.of() : (List<?>) targets) {
        String expr = String.valueOf(((Map<?, ?>) target).get("expr"));
        List<String> sides = topLevelOr(expr);
        Set<Set<String>> groupings = new HashSet<>();
        for (String side : sides) {
          Set<String> labels = grouping(side);
          if (labels != null && !groupings.add(labels)) {
            hidden.add(((Map<?, ?>) panel).get("title") + ": " + expr);
          }
        }
      }
    }

    assertThat(hidden)
        .as("`a or b` drops every series of b whose labels one of a has: use a target per side")
        .isEmpty();
  }

  /** Returns the operands of {@code expr}'s top-level {@code or}, or {@code expr} alone. */
  private static List<String> topLevelOr(String expr) {
    List<String> sides = new ArrayList<>();
    int depth = 0;
    int start = 0;
    for (int i = 0; i < expr.length(); i++) {
      char c = expr.charAt(i);
      if (c == '(' || c == '[' || c == '{') {
        depth++;
      } else if (c == ')' || c == ']' || c == '}') {
        depth--;
      } else if (depth == 0 && expr.startsWith(" or ", i)) {
        sides.add(expr.substring(start, i));
        start = i + 4;
      }
    }
    sides.add(expr.substring(start));
    return sides;
  }

  /**
   * Returns the labels {@code side}'s outer aggregation keeps ({@code by (...)}; none without), or
   * null when {@code side} is not an aggregation.
   */
  private static Set<String> grouping(String side) {
    Matcher aggregation =
        Pattern.compile("^\\s*(?:sum|avg|min|max|count|group)\\s*(?:by\\s*\\(([^)]*)\\))?\\s*\\(")
            .matcher(side);
    if (!aggregation.find()) {
      return null;
    }
    String by = aggregation.group(1) == null ? "" : aggregation.group(1);
    return Stream.of(by.split(","))
        .map(String::trim)
        .filter(l -> !l.isEmpty())
        .collect(Collectors.toSet());
  }

  private static Deployment deployment() throws IOException {
    return only(Deployment.class);
  }

  private static <T extends HasMetadata> T only(Class<T> type) throws IOException {
    List<T> found =
        Manifests.build(BASE).stream().map(Document::object).filter(type::isInstance).map(type::cast).toList();
    assertThat(found).hasSize(1);
    return found.get(0);
  }

  /**
   * Returns every {@code WEIR_*} variable the server reads: string literals in the main sources of
   * core, the adapters and the server, and the rows of the documentation's variable tables.
   */
  private static Set<String> knownVariables() throws IOException {
    Path repo = Manifests.ROOT.getParent();
    Set<String> known = new TreeSet<>();
    List<Path> roots =
        Stream.of("service/core", "service/server", "gubernator-adapter", "envoy-adapter")
            .map(m -> repo.resolve(m).resolve("src/main/java"))
            .filter(Files::isDirectory)
            .toList();
    for (Path root : roots) {
      try (Stream<Path> files = Files.walk(root)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          Matcher m = WEIR_LITERAL.matcher(Files.readString(f));
          while (m.find()) {
            known.add(m.group(1));
          }
        }
      }
    }
    List<Path> docs = new ArrayList<>();
    if (Files.isDirectory(repo.resolve("docs"))) {
      try (Stream<Path> files = Files.list(repo.resolve("docs"))) {
        docs.addAll(files.filter(p -> p.toString().endsWith(".md")).toList());
      }
    }
    for (Path doc : docs) {
      Matcher m = DOC_ROW.matcher(Files.readString(doc));
      while (m.find()) {
        known.add(m.group(1));
      }
    }
    return known;
  }
}
