package dev.weir.helm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HTTPGetAction;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.KeyToPath;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.TopologySpreadConstraint;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.openshift.api.model.monitoring.v1.PodMonitor;
import io.fabric8.openshift.api.model.monitoring.v1.RelabelConfig;
import io.fabric8.openshift.api.model.monitoring.v1.ServiceMonitor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The chart rendered by Helm's library with its defaults and a matrix of overrides. */
class ChartTest {
  private static final String TLS =
      "tls: {enabled: true, secretName: weir-tls, clientAuth: request}\n";
  private static final String MTLS =
      "tls: {enabled: true, secretName: weir-tls, clientAuth: require-and-verify}\n";

  private static final String XDS = "config: {source: xds, xds: {serverUrl: 'eg:18001'}}\n";

  /** Istio's protocol selection by Service port name: {@code <protocol>[-<suffix>]}. */
  private static final Pattern ISTIO_PORT_NAME =
      Pattern.compile("^(grpc|grpc-web|http|http2|https|mongo|mysql|redis|tcp|tls|udp)(-.*)?$");

  /** The overrides every matrix test renders, by name. */
  static List<String> matrix() {
    return List.of(
        "",
        "autoscaling: {enabled: true}\n",
        "serviceMonitor: {enabled: true}\npodMonitor: {enabled: true}\n",
        TLS,
        MTLS + "serviceMonitor: {enabled: true}\npodMonitor: {enabled: true}\n",
        "mode: ratelimit\n",
        "discovery: {watchMechanism: pods}\n",
        "discovery: {type: dns}\n",
        "discovery: {type: etcd, etcd: {endpoints: ['etcd:2379']}}\n",
        "peerSecret: {existingSecret: mine, key: token}\nconfig: {existingConfigMap: rules}\n",
        "extraEnv: [{name: WEIR_LOG_LEVEL, value: debug}]\n"
            + "extraEnvFrom: [{secretRef: {name: more}}]\n",
        XDS,
        XDS + "mode: ratelimit\n",
        "istio: {warmup: {enabled: true}, gatewayFilter: {enabled: true}}\n");
  }

  @ParameterizedTest
  @MethodSource("matrix")
  void everyObject_loadsIntoTypedModel_withoutUnknownFields(String values) {
    Rendered r = Chart.render(values);
    List<String> problems = new ArrayList<>();
    for (Chart.Document doc : r.documents()) {
      if (doc.object() instanceof GenericKubernetesResource) {
        problems.add(doc.template() + ": kind " + doc.object().getKind() + " has no typed model");
      }
      UnknownFields.in(doc.object()).forEach(u -> problems.add(doc.template() + ": " + u));
    }

    assertThat(problems).isEmpty();
    assertThat(r.objects())
        .filteredOn(o -> !o.getKind().equals("EnvoyFilter"))
        .allSatisfy(o -> assertThat(o.getMetadata().getNamespace()).isEqualTo("weir"));
  }

  @ParameterizedTest
  @MethodSource("matrix")
  void everyVariableSet_isOneWeirReads(String values) {
    Set<String> known = Settings.documented();
    Rendered r = Chart.render(values);

    assertThat(r.env().keySet()).isNotEmpty();
    assertThat(known).containsAll(r.env().keySet());
  }

  /**
   * Without {@code enableServiceLinks: false} the kubelet gives each pod variables for every
   * Service of the namespace, {@code WEIR_SERVICE_HOST}, {@code WEIR_PORT_8081_TCP} and so on for
   * the client Service {@code weir}: no setting reads them (a warning each at start), and a Service
   * whose name maps onto a setting's ({@code weir-k8s-pod}: {@code WEIR_K8S_POD_PORT}) would give
   * it a value that stops start-up.
   */
  @ParameterizedTest
  @MethodSource("matrix")
  void pods_withoutServiceLinks(String values) {
    Rendered r = Chart.render(values);

    assertThat(r.deployment().getSpec().getTemplate().getSpec().getEnableServiceLinks())
        .isFalse();
  }

  @ParameterizedTest
  @MethodSource("matrix")
  void securityContexts_nonRootReadOnlyNoEscalationNoCapabilities(String values) {
    Rendered r = Chart.render(values);
    List<PodSpec> pods =
        List.of(r.deployment().getSpec().getTemplate().getSpec(), r.testPod().getSpec());

    for (PodSpec pod : pods) {
      PodSecurityContext podContext = pod.getSecurityContext();
      assertThat(podContext.getRunAsNonRoot()).isTrue();
      assertThat(podContext.getRunAsUser()).isPositive();
      assertThat(podContext.getSeccompProfile().getType()).isEqualTo("RuntimeDefault");
      for (Container c : pod.getContainers()) {
        SecurityContext sc = c.getSecurityContext();
        assertThat(sc.getReadOnlyRootFilesystem()).as(c.getName()).isTrue();
        assertThat(sc.getAllowPrivilegeEscalation()).as(c.getName()).isFalse();
        assertThat(sc.getPrivileged()).as(c.getName()).isNotEqualTo(Boolean.TRUE);
        assertThat(sc.getCapabilities().getDrop()).as(c.getName()).containsExactly("ALL");
        assertThat(sc.getCapabilities().getAdd()).as(c.getName()).isNullOrEmpty();
      }
    }
  }

  @ParameterizedTest
  @MethodSource("matrix")
  void peerSecret_onlyByReference_neverALiteralInThePodSpec(String values) {
    Rendered r = Chart.render(values);
    PodSpec pod = r.deployment().getSpec().getTemplate().getSpec();
    Container weir = r.weir();
    Map<String, String> env = r.env();
    String file = env.get("WEIR_PEER_SECRET_FILE");
    VolumeMount mount =
        weir.getVolumeMounts().stream()
            .filter(m -> file.equals(m.getMountPath() + "/secret"))
            .findFirst()
            .orElseThrow();
    Volume volume =
        pod.getVolumes().stream()
            .filter(v -> v.getName().equals(mount.getName()))
            .findFirst()
            .orElseThrow();
    List<Secret> created = r.all(Secret.class);

    assertThat(env).doesNotContainKeys("WEIR_PEER_SECRET", "WEIR_PEER_INSECURE");
    assertThat(volume.getSecret().getItems())
        .singleElement()
        .satisfies(item -> assertThat(item.getPath()).isEqualTo("secret"));
    String secretName = volume.getSecret().getSecretName();
    String key = volume.getSecret().getItems().get(0).getKey();
    if (values.contains("existingSecret")) {
      assertThat(secretName).isEqualTo("mine");
      assertThat(key).isEqualTo("token");
      assertThat(created).isEmpty();
    } else {
      assertThat(created)
          .singleElement()
          .satisfies(
              s -> {
                assertThat(s.getMetadata().getName()).isEqualTo(secretName);
                assertThat(s.getData()).containsOnlyKeys(key);
                assertThat(s.getMetadata().getAnnotations())
                    .containsEntry(Chart.HOOK, "pre-install,pre-upgrade");
                String value = s.getData().get(key);
                assertThat(r.objects().toString()).containsOnlyOnce(value);
              });
    }
  }

  /**
   * Values an upgrade may change from those of the install: the chart's Secret instead of one of
   * yours, another key, another full name. The Deployment mounts the Secret and key of the values
   * at hand, so the Secret must be made again on every upgrade under that name and key.
   */
  static List<String> peerSecretUpgrades() {
    return List.of(
        "",
        "peerSecret: {existingSecret: ''}\n",
        "peerSecret: {key: token}\n",
        "fullnameOverride: limiter\n",
        "nameOverride: limiter\n",
        "fullnameOverride: limiter\npeerSecret: {key: token}\n");
  }

  @ParameterizedTest
  @MethodSource("peerSecretUpgrades")
  void peerSecret_madeOnInstallAndEveryUpgrade_underTheNameAndKeyTheVolumeMounts(String values) {
    Rendered r = Chart.render(values);
    Volume volume =
        r.deployment().getSpec().getTemplate().getSpec().getVolumes().stream()
            .filter(v -> v.getName().equals("peer-secret"))
            .findFirst()
            .orElseThrow();
    Secret secret = r.only(Secret.class);
    Map<String, String> annotations = secret.getMetadata().getAnnotations();

    assertThat(annotations.get(Chart.HOOK).split(","))
        .as("hook events of the peer Secret")
        .contains("pre-install", "pre-upgrade");
    assertThat(annotations)
        .containsEntry(Chart.HOOK + "-delete-policy", "before-hook-creation")
        .doesNotContainKey("helm.sh/resource-policy");
    assertThat(secret.getMetadata().getName()).isEqualTo(volume.getSecret().getSecretName());
    assertThat(secret.getData()).containsOnlyKeys(volume.getSecret().getItems().get(0).getKey());
  }

  /** What the peer Secret's template looks up; the test below puts an existing Secret there. */
  private static final String PEER_SECRET_LOOKUP =
      "lookup \"v1\" \"Secret\" .Release.Namespace $name";

  @Test
  void peerSecret_onUpgrade_keepsTheValueOfTheExistingSecret_underTheNewKeyOrItsOnlyOne()
      throws Exception {
    String template =
        Files.readString(Chart.DIR.resolve("templates/secret-peer.yaml"), StandardCharsets.UTF_8);
    assertThat(template).contains(PEER_SECRET_LOOKUP);
    String old = b64("old-value");
    String other = b64("other-value");

    // the key unchanged
    assertThat(peerSecretAfterUpgrade("", "{secret: " + old + "}"))
        .containsExactly(Map.entry("secret", old));
    // peerSecret.key changed: the old key's value under the new key
    assertThat(peerSecretAfterUpgrade("peerSecret: {key: token}\n", "{secret: " + old + "}"))
        .containsExactly(Map.entry("token", old));
    // the new key already there wins
    assertThat(
            peerSecretAfterUpgrade(
                "peerSecret: {key: token}\n", "{secret: " + other + ", token: " + old + "}"))
        .containsExactly(Map.entry("token", old));
    // several entries, none the key: no way to tell which, so a new one
    String fresh =
        peerSecretAfterUpgrade("peerSecret: {key: token}\n", "{a: " + old + ", b: " + other + "}")
            .get("token");
    assertThat(new String(Base64.getDecoder().decode(fresh), StandardCharsets.UTF_8))
        .matches("[A-Za-z0-9]{48}");
    // no Secret (first install, or a new name): a new one
    String first = Chart.render("").only(Secret.class).getData().get("secret");
    assertThat(new String(Base64.getDecoder().decode(first), StandardCharsets.UTF_8))
        .matches("[A-Za-z0-9]{48}");
  }

  /** The chart's peer Secret's data when {@code lookup} finds one whose data is {@code data}. */
  private static Map<String, String> peerSecretAfterUpgrade(String values, String data) {
    String found = "fromYaml \"{data: " + data + "}\"";
    Rendered r =
        Chart.render("weir", "weir", values, text -> text.replace(PEER_SECRET_LOOKUP, found));
    return r.only(Secret.class).getData();
  }

  private static String b64(String text) {
    return Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8));
  }

  /** A Service's name: a DNS-1035 label (at most 63 characters). */
  private static final Pattern DNS_LABEL = Pattern.compile("[a-z]([-a-z0-9]{0,61}[a-z0-9])?");

  /** Any other object's name: a DNS-1123 subdomain (at most 253 characters). */
  private static final Pattern DNS_SUBDOMAIN =
      Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");

  /** The longest release name Helm takes (53) and the longest full name the chart keeps (63). */
  static List<List<String>> longNames() {
    String everything =
        "serviceMonitor: {enabled: true}\npodMonitor: {enabled: true}\n"
            + "istio: {warmup: {enabled: true}, gatewayFilter: {enabled: true}}\n";
    String release = "r".repeat(53);
    String fullname = "fullnameOverride: " + "a".repeat(60) + "\n";
    return List.of(
        List.of("weir", fullname + everything),
        List.of("weir", fullname + everything + "discovery: {type: dns}\n"),
        List.of(release, everything),
        List.of(release, everything + "discovery: {type: dns}\n"),
        List.of(release, everything + "discovery: {watchMechanism: pods}\n"),
        List.of(release, MTLS + "serviceMonitor: {enabled: true}\n"));
  }

  @ParameterizedTest
  @MethodSource("longNames")
  void longNames_everyNameWithinKubernetesLimits_andTheVariablesNameTheRenderedServices(
      List<String> releaseAndValues) {
    Rendered r = Chart.render(releaseAndValues.get(0), "weir", releaseAndValues.get(1));
    List<String> problems = new ArrayList<>();
    for (Chart.Document doc : r.documents()) {
      HasMetadata o = doc.object();
      String name = o.getMetadata().getName();
      Pattern allowed = o instanceof Service ? DNS_LABEL : DNS_SUBDOMAIN;
      int max = o instanceof Service ? 63 : 253;
      if (name.length() > max || !allowed.matcher(name).matches()) {
        problems.add(
            doc.template() + ": " + o.getKind() + " " + name + " (" + name.length() + " chars)");
      }
      if (o.getMetadata().getLabels() != null) {
        o.getMetadata()
            .getLabels()
            .forEach(
                (k, v) -> {
                  if (v.length() > 63) {
                    problems.add(doc.template() + ": label " + k + "=" + v);
                  }
                });
      }
    }
    Map<String, String> env = r.env();
    String peers =
        env.containsKey("WEIR_DNS_FQDN")
            ? env.get("WEIR_DNS_FQDN").substring(0, env.get("WEIR_DNS_FQDN").indexOf('.'))
            : env.get("WEIR_K8S_SERVICE_NAME");

    assertThat(problems).as("names Kubernetes refuses").isEmpty();
    assertThat(service(r, peers).getSpec().getClusterIP()).isEqualTo("None");
    assertThat(env.get("WEIR_DNS_FQDN") == null ? "" : env.get("WEIR_DNS_FQDN"))
        .matches("|" + Pattern.quote(peers + ".weir.svc.cluster.local"));
    assertThat(r.all(Service.class))
        .extracting(s -> s.getMetadata().getName())
        .doesNotHaveDuplicates()
        .contains(r.deployment().getMetadata().getName());
  }

  @Test
  void defaults_replicasAtLeastTwo_spreadOverNodes_pdbAllowsOneDown() {
    Rendered r = Chart.render("");
    Deployment d = r.deployment();
    Map<String, String> podLabels = d.getSpec().getTemplate().getMetadata().getLabels();
    PodDisruptionBudget pdb = r.only(PodDisruptionBudget.class);

    assertThat(d.getSpec().getReplicas()).isGreaterThanOrEqualTo(2);
    assertThat(r.all(HorizontalPodAutoscaler.class)).isEmpty();
    assertThat(d.getSpec().getTemplate().getSpec().getTopologySpreadConstraints())
        .extracting(TopologySpreadConstraint::getTopologyKey)
        .containsExactly("kubernetes.io/hostname");
    assertThat(d.getSpec().getTemplate().getSpec().getTopologySpreadConstraints())
        .allSatisfy(
            (TopologySpreadConstraint c) -> {
              assertThat(c.getMaxSkew()).isEqualTo(1);
              assertThat(c.getWhenUnsatisfiable()).isEqualTo("ScheduleAnyway");
              assertThat(podLabels).containsAllEntriesOf(c.getLabelSelector().getMatchLabels());
            });
    assertThat(pdb.getSpec().getMaxUnavailable().getIntVal()).isEqualTo(1);
    assertThat(podLabels).containsAllEntriesOf(pdb.getSpec().getSelector().getMatchLabels());
    assertThat(d.getSpec().getSelector().getMatchLabels())
        .isEqualTo(pdb.getSpec().getSelector().getMatchLabels());
    assertThat(r.weir().getResources().getRequests()).containsKeys("cpu", "memory");
  }

  @Test
  void autoscaling_anHpaOnTheDeployment_andNoFixedReplicas() {
    Rendered r =
        Chart.render(
            "autoscaling: {enabled: true, minReplicas: 3, maxReplicas: 7,"
                + " targetCPUUtilizationPercentage: 60}\n");
    HorizontalPodAutoscaler hpa = r.only(HorizontalPodAutoscaler.class);

    assertThat(r.deployment().getSpec().getReplicas()).isNull();
    assertThat(hpa.getSpec().getScaleTargetRef().getKind()).isEqualTo("Deployment");
    assertThat(hpa.getSpec().getScaleTargetRef().getName())
        .isEqualTo(r.deployment().getMetadata().getName());
    assertThat(hpa.getSpec().getMinReplicas()).isEqualTo(3);
    assertThat(hpa.getSpec().getMaxReplicas()).isEqualTo(7);
    assertThat(hpa.getSpec().getMetrics())
        .singleElement()
        .satisfies(
            m -> {
              assertThat(m.getResource().getName()).isEqualTo("cpu");
              assertThat(m.getResource().getTarget().getAverageUtilization()).isEqualTo(60);
            });
  }

  @Test
  void rbac_listAndWatchOnExactlyWhatDiscoveryWatches_forTheDeploymentsAccount() {
    Map<String, Map<String, Set<String>>> expected =
        Map.of(
            "",
            Map.of("discovery.k8s.io/endpointslices", Set.of("list", "watch")),
            "discovery: {watchMechanism: pods}\n",
            Map.of("/pods", Set.of("list", "watch")));
    expected.forEach(
        (values, grants) -> {
          Rendered r = Chart.render(values);
          RoleBinding binding = r.only(RoleBinding.class);
          String account = r.deployment().getSpec().getTemplate().getSpec().getServiceAccountName();

          assertThat(grants(r.only(Role.class))).as(values).isEqualTo(grants);
          assertThat(binding.getRoleRef().getName())
              .isEqualTo(r.only(Role.class).getMetadata().getName());
          assertThat(binding.getSubjects())
              .singleElement()
              .satisfies(
                  s -> {
                    assertThat(s.getKind()).isEqualTo("ServiceAccount");
                    assertThat(s.getName()).isEqualTo(account);
                  });
          assertThat(r.only(ServiceAccount.class).getMetadata().getName()).isEqualTo(account);
        });
  }

  @Test
  void discovery_podsWatch_selectsThePodsOfThisRelease() {
    Rendered r = Chart.render("release-a", "weir", "discovery: {watchMechanism: pods}\n");
    Map<String, String> podLabels =
        r.deployment().getSpec().getTemplate().getMetadata().getLabels();
    Map<String, String> selector = new HashMap<>();
    for (String pair : r.env().get("WEIR_K8S_SELECTOR").split(",")) {
      String[] kv = pair.split("=", 2);
      selector.put(kv[0], kv[1]);
    }

    assertThat(r.env()).containsEntry("WEIR_K8S_WATCH_MECHANISM", "pods");
    assertThat(selector).isEqualTo(r.deployment().getSpec().getSelector().getMatchLabels());
    assertThat(podLabels).containsAllEntriesOf(selector);
  }

  @Test
  void discovery_kubernetes_watchesTheHeadlessPeersServiceOfReadyPods() {
    Rendered r = Chart.render("");
    Service peers = service(r, r.env().get("WEIR_K8S_SERVICE_NAME"));

    assertThat(peers.getSpec().getClusterIP()).isEqualTo("None");
    assertThat(peers.getSpec().getPublishNotReadyAddresses()).isNotEqualTo(Boolean.TRUE);
    assertThat(r.env().get("WEIR_K8S_POD_PORT")).isEqualTo(String.valueOf(port(r.weir(), "grpc")));
    assertThat(peers.getSpec().getPorts())
        .singleElement()
        .satisfies(p -> assertThat(p.getTargetPort().getStrVal()).isEqualTo("peer"));
  }

  @Test
  void discovery_dns_resolvesAHeadlessServiceOfEveryPod_withoutRbac() {
    Rendered r = Chart.render("release-b", "weir", "discovery: {type: dns}\n");
    Map<String, String> env = r.env();
    String fqdn = env.get("WEIR_DNS_FQDN");
    Service dns = service(r, fqdn.substring(0, fqdn.indexOf('.')));

    assertThat(fqdn).endsWith(".weir.svc.cluster.local");
    assertThat(dns.getSpec().getPublishNotReadyAddresses()).isTrue();
    assertThat(dns.getSpec().getClusterIP()).isEqualTo("None");
    assertThat(env).containsEntry("WEIR_K8S_POD_IP", "fieldRef:status.podIP");
    assertThat(env).containsEntry("WEIR_GRPC_ADDRESS", "0.0.0.0:1051");
    assertThat(env).doesNotContainKey("WEIR_ADVERTISE_ADDRESS");
    assertThat(r.all(Role.class)).isEmpty();
    assertThat(r.all(RoleBinding.class)).isEmpty();
    assertThat(r.only(ServiceAccount.class).getAutomountServiceAccountToken()).isFalse();
  }

  /**
   * A node advertises its pod IP (WEIR_K8S_POD_IP) in place of its wildcard gRPC host, bracketed
   * when IPv6; "$(WEIR_K8S_POD_IP):port" would give fd00::5:1051, which no address parser takes.
   */
  @ParameterizedTest
  @MethodSource("matrix")
  void advertiseAddress_neverThePodIpJoinedToAPort_theNodeBuildsItFromThePodIp(String values) {
    Rendered r = Chart.render(values);
    Map<String, String> env = r.env();

    assertThat(env).doesNotContainKey("WEIR_ADVERTISE_ADDRESS");
    assertThat(env.values()).noneMatch(v -> v != null && v.contains("$("));
    assertThat(env).containsEntry("WEIR_K8S_POD_IP", "fieldRef:status.podIP");
    if (values.contains("mode: ratelimit")) {
      assertThat(env).doesNotContainKeys("WEIR_GRPC_ADDRESS", "GRPC_HOST");
    } else {
      assertThat(env.get("WEIR_GRPC_ADDRESS")).startsWith("0.0.0.0:");
    }
  }

  @ParameterizedTest
  @MethodSource("matrix")
  void probes_readyzAndLiveCheck_onAPortTheContainerOpens(String values) {
    Rendered r = Chart.render(values);
    Container weir = r.weir();
    boolean tls = values.contains("tls:");
    String port = values.contains("require-and-verify") ? "status" : "http";

    assertThat(weir.getReadinessProbe().getHttpGet().getPath()).isEqualTo("/readyz");
    assertThat(weir.getLivenessProbe().getHttpGet().getPath()).isEqualTo("/v1/LiveCheck");
    assertThat(weir.getStartupProbe().getHttpGet().getPath()).isEqualTo("/v1/LiveCheck");
    assertThat(
            weir.getStartupProbe().getPeriodSeconds()
                * weir.getStartupProbe().getFailureThreshold())
        .as("seconds a starting pod has: the largest WEIR_WARMUP (120 s) and the JVM's start")
        .isGreaterThanOrEqualTo(150);
    for (HTTPGetAction get :
        List.of(
            weir.getReadinessProbe().getHttpGet(),
            weir.getLivenessProbe().getHttpGet(),
            weir.getStartupProbe().getHttpGet())) {
      assertThat(get.getPort().getStrVal()).isEqualTo(port);
      assertThat(get.getScheme()).isEqualTo(tls ? "HTTPS" : "HTTP");
      assertThat(port(weir, port)).isPositive();
    }
  }

  @ParameterizedTest
  @MethodSource("matrix")
  void ports_listenersMatchContainerPorts_servicePortsNamedForIstio(String values) {
    Rendered r = Chart.render(values);
    Container weir = r.weir();
    Map<String, String> env = r.env();
    boolean ratelimit = values.contains("mode: ratelimit");

    assertThat(port(weir, "grpc")).isEqualTo(ratelimit ? 8081 : 1051);
    assertThat(port(weir, "http")).isEqualTo(ratelimit ? 8080 : 1050);
    assertThat(port(weir, "peer")).isEqualTo(1052);
    assertThat(env).containsEntry("WEIR_PEER_ADDRESS", "0.0.0.0:1052");
    if (!ratelimit) {
      assertThat(env)
          .containsEntry("WEIR_GRPC_ADDRESS", "0.0.0.0:1051")
          .containsEntry("WEIR_HTTP_ADDRESS", "0.0.0.0:1050");
    }
    if (values.contains("require-and-verify")) {
      assertThat(env).containsEntry("WEIR_STATUS_HTTP_ADDRESS", "0.0.0.0:" + port(weir, "status"));
    } else {
      assertThat(env).doesNotContainKey("WEIR_STATUS_HTTP_ADDRESS");
    }
    Set<String> containerPorts = new TreeSet<>();
    weir.getPorts().forEach(p -> containerPorts.add(p.getName()));
    for (Service s : r.all(Service.class)) {
      for (ServicePort p : s.getSpec().getPorts()) {
        assertThat(p.getName()).as(s.getMetadata().getName()).matches(ISTIO_PORT_NAME);
        assertThat(p.getAppProtocol())
            .as(p.getName())
            .isEqualTo(p.getName().replaceFirst("-.*", ""))
            .isIn(values.contains("tls:") ? List.of("tls", "https") : List.of("grpc", "http"));
        assertThat(containerPorts).contains(p.getTargetPort().getStrVal());
      }
    }
    Service client = service(r, r.deployment().getMetadata().getName());
    assertThat(client.getSpec().getPorts())
        .anySatisfy(
            p ->
                assertThat(p.getName())
                    .isEqualTo(values.contains("tls:") ? "tls-rls" : "grpc-rls"));
  }

  @Test
  void tls_certificateKeyAndCaFromTheSecret_statusListenerOnlyForMutualTls() {
    Rendered r = Chart.render(MTLS);
    Map<String, String> env = r.env();
    VolumeMount mount =
        r.weir().getVolumeMounts().stream()
            .filter(m -> m.getName().equals("tls"))
            .findFirst()
            .orElseThrow();
    Volume volume =
        r.deployment().getSpec().getTemplate().getSpec().getVolumes().stream()
            .filter(v -> v.getName().equals("tls"))
            .findFirst()
            .orElseThrow();

    assertThat(volume.getSecret().getSecretName()).isEqualTo("weir-tls");
    assertThat(mount.getReadOnly()).isTrue();
    assertThat(env)
        .containsEntry("WEIR_TLS_CERT", mount.getMountPath() + "/tls.crt")
        .containsEntry("WEIR_TLS_KEY", mount.getMountPath() + "/tls.key")
        .containsEntry("WEIR_TLS_CA", mount.getMountPath() + "/ca.crt")
        .containsEntry("WEIR_TLS_CLIENT_AUTH", "require-and-verify");
    assertThat(r.env()).containsKey("WEIR_STATUS_HTTP_ADDRESS");
    assertThat(Chart.render(TLS).env()).doesNotContainKey("WEIR_STATUS_HTTP_ADDRESS");
    assertThatThrownBy(() -> Chart.render("tls: {enabled: true, secretName: s, useCa: false}\n"))
        .hasMessageContaining("tls.useCa: false is not valid with tls.enabled")
        .hasMessageContaining("set tls.useCa: true");
    assertThat(Chart.render("tls: {enabled: false, useCa: false}\n").env())
        .doesNotContainKey("WEIR_TLS_CA");
  }

  @Test
  void tls_fromAVolumeSource_oneCertificatePerPod() {
    Rendered r =
        Chart.render(
            "tls: {enabled: true, volume: {csi: {driver: csi.cert-manager.io, readOnly: true,"
                + " volumeAttributes: {csi.cert-manager.io/issuer-name: weir-ca}}},"
                + " peerAllowedIdentities: ['*.weir-peers.weir.svc.cluster.local',"
                + " 'spiffe://cluster.local/ns/weir/sa/weir']}\n");

    for (PodSpec pod :
        List.of(r.deployment().getSpec().getTemplate().getSpec(), r.testPod().getSpec())) {
      assertThat(pod.getVolumes())
          .filteredOn(v -> v.getName().equals("tls"))
          .singleElement()
          .satisfies(
              v -> {
                assertThat(v.getSecret()).isNull();
                assertThat(v.getCsi().getDriver()).isEqualTo("csi.cert-manager.io");
                assertThat(v.getCsi().getVolumeAttributes())
                    .containsEntry("csi.cert-manager.io/issuer-name", "weir-ca");
              });
    }
    assertThat(r.env()).containsEntry("WEIR_TLS_CERT", "/etc/weir/tls/tls.crt");
    // per-pod certificates have names of their own: the default (this node's own names) would
    // refuse every peer, so the pods allow the names the certificates share
    assertThat(r.env())
        .containsEntry(
            "WEIR_PEER_ALLOWED_IDENTITIES",
            "*.weir-peers.weir.svc.cluster.local,spiffe://cluster.local/ns/weir/sa/weir");
  }

  @Test
  void tls_peerAllowedIdentities_unsetByDefault_refusedWithoutTlsOrWithAComma() {
    assertThat(Chart.render(TLS).env()).doesNotContainKey("WEIR_PEER_ALLOWED_IDENTITIES");
    assertThatThrownBy(() -> Chart.render("tls: {peerAllowedIdentities: ['*.weir.svc']}\n"))
        .hasMessageContaining("tls.peerAllowedIdentities")
        .hasMessageContaining("tls.enabled");
    assertThatThrownBy(
            () ->
                Chart.render(
                    "tls: {enabled: true, secretName: s,"
                        + " peerAllowedIdentities: ['a.svc,b.svc']}\n"))
        .hasMessageContaining("peerAllowedIdentities");
  }

  @Test
  void tls_peerServerName_renderedWithTls_unsetByDefault_refusedWithoutTlsWithAPortOrAnUnderscore() {
    assertThat(Chart.render(TLS).env()).doesNotContainKey("WEIR_PEER_TLS_SERVER_NAME");
    assertThat(
            Chart.render(
                    "tls: {enabled: true, secretName: weir-tls,"
                        + " peerServerName: weir-peers.weir.svc.cluster.local}\n")
                .env())
        .containsEntry("WEIR_PEER_TLS_SERVER_NAME", "weir-peers.weir.svc.cluster.local");
    assertThatThrownBy(
            () -> Chart.render("tls: {peerServerName: weir-peers.weir.svc.cluster.local}\n"))
        .hasMessageContaining("tls.peerServerName")
        .hasMessageContaining("tls.enabled");
    assertThatThrownBy(
            () ->
                Chart.render(
                    "tls: {enabled: true, secretName: s, peerServerName: 'weir-peers:1052'}\n"))
        .hasMessageContaining("peerServerName");
    assertThatThrownBy(
            () ->
                Chart.render(
                    "tls: {enabled: true, secretName: s, peerServerName: weir_peers.svc}\n"))
        .hasMessageContaining("peerServerName");
  }

  @ParameterizedTest
  @ValueSource(strings = {"weir-peers.1team", "weir-peers.1team.", "a.1b", "10.0.0.5", "'[::1]'"})
  void tls_peerServerName_theNodeAccepts_renders(String name) {
    assertThat(
            Chart.render("tls: {enabled: true, secretName: s, peerServerName: " + name + "}\n")
                .env())
        .containsKey("WEIR_PEER_TLS_SERVER_NAME");
  }

  @ParameterizedTest
  @ValueSource(strings = {"-weir", "weir-", "a..b", "a.-b", "weir..", "'.'"})
  void tls_peerServerName_withAnEdgeHyphenOrEmptyPart_isRefused(String name) {
    assertThatThrownBy(
            () ->
                Chart.render(
                    "tls: {enabled: true, secretName: s, peerServerName: " + name + "}\n"))
        .hasMessageContaining("peerServerName");
  }

  @Test
  void tls_peerServerName_withAPartOver63Characters_isRefused() {
    String name = "a".repeat(64) + ".test";
    assertThatThrownBy(
            () ->
                Chart.render(
                    "tls: {enabled: true, secretName: s, peerServerName: " + name + "}\n"))
        .hasMessageContaining("peerServerName");
    assertThat(
            Chart.render(
                    "tls: {enabled: true, secretName: s, peerServerName: "
                        + name.substring(1)
                        + "}\n")
                .env())
        .containsKey("WEIR_PEER_TLS_SERVER_NAME");
  }

  @Test
  void monitoring_scrapesMetricsOnThePortTheProbesUse() {
    for (String values : List.of("", TLS, MTLS)) {
      Rendered r =
          Chart.render(values + "serviceMonitor: {enabled: true}\npodMonitor: {enabled: true}\n");
      String podPort = r.weir().getReadinessProbe().getHttpGet().getPort().getStrVal();
      ServiceMonitor sm = r.only(ServiceMonitor.class);
      PodMonitor pm = r.only(PodMonitor.class);
      Service client = service(r, r.deployment().getMetadata().getName());
      String smPort = sm.getSpec().getEndpoints().get(0).getPort();
      List<Service> scraped = scrapedServices(r, sm);
      String scheme = values.isEmpty() ? null : "https";

      assertThat(pm.getSpec().getPodMetricsEndpoints().get(0).getPort()).isEqualTo(podPort);
      assertThat(pm.getSpec().getPodMetricsEndpoints().get(0).getPath()).isEqualTo("/metrics");
      assertThat(pm.getSpec().getPodMetricsEndpoints().get(0).getScheme()).isEqualTo(scheme);
      assertThat(sm.getSpec().getEndpoints().get(0).getPath()).isEqualTo("/metrics");
      assertThat(sm.getSpec().getEndpoints().get(0).getScheme()).isEqualTo(scheme);
      assertThat(scraped)
          .as(values)
          .singleElement()
          .satisfies(
              s -> {
                assertThat(s.getSpec().getPorts())
                    .filteredOn(p -> p.getName().equals(smPort))
                    .singleElement()
                    .satisfies(p -> assertThat(p.getTargetPort().getStrVal()).isEqualTo(podPort));
                // the status listener asks for no certificate: never through the client Service
                assertThat(s.getMetadata().getName().equals(client.getMetadata().getName()))
                    .isEqualTo(!values.equals(MTLS));
              });
      assertThat(r.deployment().getSpec().getTemplate().getMetadata().getLabels())
          .containsAllEntriesOf(pm.getSpec().getSelector().getMatchLabels());
    }
    assertThat(Chart.render("").all(ServiceMonitor.class)).isEmpty();
    assertThat(Chart.render("").all(PodMonitor.class)).isEmpty();
  }

  /**
   * Under mutual TLS the status listener answers anyone, without a client certificate: its port is
   * on a ClusterIP Service of its own, never on the client Service, whose type may publish it, and
   * the NetworkPolicy does not open it to every source.
   */
  @Test
  void mutualTls_statusPortOnAClusterIpServiceOfItsOwn_neverPublishedOrOpenToEverySource() {
    Rendered r =
        Chart.render(MTLS + "service: {type: LoadBalancer}\nserviceMonitor: {enabled: true}\n");
    Service client = service(r, r.deployment().getMetadata().getName());
    ServiceMonitor sm = r.only(ServiceMonitor.class);
    String smPort = sm.getSpec().getEndpoints().get(0).getPort();
    NetworkPolicy policy = r.only(NetworkPolicy.class);

    assertThat(client.getSpec().getType()).isEqualTo("LoadBalancer");
    assertThat(client.getSpec().getPorts())
        .extracting(p -> p.getTargetPort().getStrVal())
        .doesNotContain("status");
    assertThat(scrapedServices(r, sm))
        .singleElement()
        .satisfies(
            s -> {
              assertThat(s.getMetadata().getName()).isNotEqualTo(client.getMetadata().getName());
              assertThat(s.getSpec().getType()).isEqualTo("ClusterIP");
              assertThat(s.getSpec().getPorts())
                  .singleElement()
                  .satisfies(
                      p -> {
                        assertThat(p.getName()).isEqualTo(smPort);
                        assertThat(p.getTargetPort().getStrVal()).isEqualTo("status");
                        assertThat(p.getPort()).isEqualTo(1053);
                      });
            });
    assertThat(policy.getSpec().getIngress())
        .filteredOn(rule -> rule.getFrom() == null || rule.getFrom().isEmpty())
        .flatExtracting(NetworkPolicyIngressRule::getPorts)
        .extracting(p -> p.getPort().getStrVal())
        .isNotEmpty()
        .doesNotContain("status");
    // by default only the node's own traffic (the kubelet's probes) reaches it
    assertThat(policy.getSpec().getIngress())
        .flatExtracting(NetworkPolicyIngressRule::getPorts)
        .extracting(p -> p.getPort().getStrVal())
        .doesNotContain("status");
  }

  @Test
  void mutualTls_statusPortOpenToTheSourcesOfNetworkPolicyStatusFrom_andNothingElse() {
    String from =
        "networkPolicy: {status: {from: [{namespaceSelector: {matchLabels:"
            + " {kubernetes.io/metadata.name: monitoring}}}]}}\n";
    NetworkPolicy policy = Chart.render(MTLS + from).only(NetworkPolicy.class);

    assertThat(policy.getSpec().getIngress())
        .filteredOn(
            rule ->
                rule.getPorts().stream().anyMatch(p -> p.getPort().getStrVal().equals("status")))
        .singleElement()
        .satisfies(
            rule -> {
              assertThat(rule.getPorts()).hasSize(1);
              assertThat(rule.getFrom())
                  .singleElement()
                  .satisfies(
                      (NetworkPolicyPeer peer) ->
                          assertThat(peer.getNamespaceSelector().getMatchLabels())
                              .containsExactly(
                                  Map.entry("kubernetes.io/metadata.name", "monitoring")));
            });
    // without mutual TLS there is no status port: the HTTP port serves probes and scrapes
    assertThat(Chart.render(TLS + from).only(NetworkPolicy.class).getSpec().getIngress())
        .flatExtracting(NetworkPolicyIngressRule::getPorts)
        .extracting(p -> p.getPort().getStrVal())
        .containsExactlyInAnyOrder("peer", "grpc", "http");
  }

  /**
   * Under mutual TLS the unauthenticated status listener gets a Service only for the ServiceMonitor
   * to scrape through: the probes and a PodMonitor reach the pods directly.
   */
  @Test
  void mutualTls_statusServiceOnlyWithAServiceMonitor() {
    for (String values : List.of(MTLS, MTLS + "podMonitor: {enabled: true}\n")) {
      assertThat(Chart.render(values).all(Service.class))
          .as(values)
          .extracting(s -> s.getMetadata().getName())
          .isNotEmpty()
          .noneMatch(name -> name.endsWith("-status"));
    }
    assertThat(Chart.render(MTLS + "serviceMonitor: {enabled: true}\n").all(Service.class))
        .extracting(s -> s.getMetadata().getName())
        .contains("weir-status");
  }

  /**
   * The {@code job} label of the ServiceMonitor's samples is the client Service's name whatever
   * Service it scrapes through, so alerts and recording rules keyed on it survive mutual TLS.
   */
  @Test
  void serviceMonitor_jobIsTheClientServicesName() {
    for (String release : List.of("weir", "prod")) {
      for (String values : List.of("", TLS, MTLS)) {
        Rendered r = Chart.render(release, "weir", values + "serviceMonitor: {enabled: true}\n");
        ServiceMonitor sm = r.only(ServiceMonitor.class);
        String client = r.deployment().getMetadata().getName();

        assertThat(scrapedServices(r, sm))
            .as("%s %s", release, values)
            .singleElement()
            .satisfies(s -> assertThat(job(sm, s)).isEqualTo(client));
      }
    }
  }

  /**
   * A release that an older chart installed, upgraded with {@code --reuse-values}, renders with the
   * older chart's defaults, which have no networkPolicy.status: no status rule, no failure.
   */
  @Test
  void upgradeReusingValues_withoutNetworkPolicyStatus_rendersNoStatusRule() {
    Rendered r =
        Chart.renderReusingValues(
            MTLS + "serviceMonitor: {enabled: true}\n", "networkPolicy.status");

    assertThat(r.only(NetworkPolicy.class).getSpec().getIngress())
        .flatExtracting(NetworkPolicyIngressRule::getPorts)
        .extracting(p -> p.getPort().getStrVal())
        .containsExactlyInAnyOrder("peer", "grpc", "http");
  }

  @Test
  void config_fromAConfigMapMountedAsADirectory_withAChecksumThatFollowsItsContent() {
    Rendered defaults = Chart.render("");
    Rendered edited =
        Chart.render("config: {files: {a.yaml: \"domain: other\\ndescriptors: []\\n\"}}\n");
    ConfigMap config = defaults.only(ConfigMap.class);
    VolumeMount mount =
        defaults.weir().getVolumeMounts().stream()
            .filter(m -> m.getMountPath().equals(defaults.env().get("WEIR_ENVOY_CONFIG")))
            .findFirst()
            .orElseThrow();
    Volume volume =
        defaults.deployment().getSpec().getTemplate().getSpec().getVolumes().stream()
            .filter(v -> v.getName().equals(mount.getName()))
            .findFirst()
            .orElseThrow();

    assertThat(mount.getSubPath()).isNull();
    assertThat(volume.getConfigMap().getName()).isEqualTo(config.getMetadata().getName());
    assertThat(config.getData()).containsKey("config.yaml");
    assertThat(config.getData().get("config.yaml")).startsWith("domain: ratelimit\n");
    assertThat(edited.only(ConfigMap.class).getData()).containsOnlyKeys("a.yaml");
    assertThat(checksum(defaults)).matches("[0-9a-f]{64}");
    assertThat(checksum(edited)).isNotEqualTo(checksum(defaults));
    assertThat(checksum(Chart.render("extraEnv: [{name: WEIR_LOG_LEVEL, value: debug}]\n")))
        .isEqualTo(checksum(defaults));

    assertThat(
            Chart.render("podAnnotations: {team: rl}\n")
                .deployment()
                .getSpec()
                .getTemplate()
                .getMetadata()
                .getAnnotations())
        .containsEntry("team", "rl")
        .containsEntry("checksum/config", checksum(defaults));

    Rendered existing = Chart.render("config: {existingConfigMap: rules}\n");
    assertThat(existing.all(ConfigMap.class)).isEmpty();
    assertThat(existing.deployment().getSpec().getTemplate().getSpec().getVolumes())
        .anySatisfy(v -> assertThat(v.getConfigMap().getName()).isEqualTo("rules"));
  }

  /**
   * A descriptor file reaches the ConfigMap as written, whatever its first line's indentation
   * (YAML takes a block's indentation from it) or its last line's end.
   */
  @Test
  void config_filesReachTheConfigMapAsWritten() {
    String indented = "  # limits of team a\ndomain: a\ndescriptors: []\n";
    String unterminated = "domain: b\ndescriptors: []";
    Rendered r =
        Chart.render(
            "config:\n  files:\n"
                + "    a.yaml: "
                + Serialization.asJson(indented)
                + "\n    b.yaml: "
                + Serialization.asJson(unterminated)
                + "\n");

    assertThat(r.only(ConfigMap.class).getData())
        .containsExactlyInAnyOrderEntriesOf(Map.of("a.yaml", indented, "b.yaml", unterminated));
  }

  @Test
  void ratelimitMode_runsTheDropInWithItsPortsAndReadsTheSameConfigDirectory() {
    Rendered r = Chart.render("mode: ratelimit\n");
    Map<String, String> env = r.env();
    String configDir = env.get("RUNTIME_ROOT") + "/" + env.get("RUNTIME_APPDIRECTORY");

    assertThat(r.weir().getArgs()).containsExactly("ratelimit");
    assertThat(env)
        .containsEntry("USE_STATSD", "false")
        .containsEntry("WEIR_K8S_POD_PORT", "8081")
        .doesNotContainKeys("WEIR_ENVOY_CONFIG", "WEIR_GRPC_ADDRESS", "WEIR_HTTP_ADDRESS");
    assertThat(r.weir().getVolumeMounts())
        .anySatisfy(m -> assertThat(m.getMountPath()).isEqualTo(configDir));
    assertThat(Chart.render("").weir().getArgs()).isNullOrEmpty();
  }

  @Test
  void xds_configFromTheServer_withoutConfigMapOrMount() {
    Rendered weir =
        Chart.render("config: {source: xds, xds: {serverUrl: 'eg:18001', nodeId: rls}}\n");
    Rendered ratelimit = Chart.render(XDS + "mode: ratelimit\n");

    assertThat(weir.env())
        .containsEntry("WEIR_ENVOY_CONFIG_SOURCE", "xds")
        .containsEntry("WEIR_ENVOY_XDS_SERVER_URL", "eg:18001")
        .containsEntry("WEIR_ENVOY_XDS_NODE_ID", "rls")
        .doesNotContainKey("WEIR_ENVOY_CONFIG");
    assertThat(ratelimit.env())
        .containsEntry("CONFIG_TYPE", "GRPC_XDS_SOTW")
        .containsEntry("CONFIG_GRPC_XDS_SERVER_URL", "eg:18001")
        .containsEntry("CONFIG_GRPC_XDS_NODE_ID", "default")
        .doesNotContainKeys("RUNTIME_ROOT", "WEIR_ENVOY_CONFIG_SOURCE");
    for (Rendered r : List.of(weir, ratelimit)) {
      assertThat(r.all(ConfigMap.class)).isEmpty();
      assertThat(r.deployment().getSpec().getTemplate().getSpec().getVolumes())
          .noneMatch(v -> v.getConfigMap() != null);
      assertThat(r.deployment().getSpec().getTemplate().getMetadata().getAnnotations())
          .doesNotContainKey("checksum/config");
    }
    assertThatThrownBy(() -> Chart.render("config: {source: xds}\n"))
        .hasMessageContaining("config.xds.serverUrl");
  }

  @Test
  void extraEnv_comesAfterTheChartsOwn_andExtraEnvFromIsPassedOn() {
    Rendered r =
        Chart.render(
            "extraEnv: [{name: WEIR_LOG_LEVEL, value: debug},"
                + " {name: WEIR_CACHE_SIZE, valueFrom: {configMapKeyRef: {name: c, key: k}}}]\n"
                + "extraEnvFrom: [{secretRef: {name: more}}]\n");
    List<EnvVar> env = r.weir().getEnv();

    assertThat(env.get(env.size() - 2).getName()).isEqualTo("WEIR_LOG_LEVEL");
    assertThat(env.get(env.size() - 1).getValueFrom().getConfigMapKeyRef().getName())
        .isEqualTo("c");
    assertThat(r.weir().getEnvFrom())
        .singleElement()
        .satisfies(e -> assertThat(e.getSecretRef().getName()).isEqualTo("more"));
  }

  /**
   * A variable of extraEnv replaces the chart's of that name: a container listing a name twice
   * gets a warning from the API server, and strategic merge patches (helm upgrade) key env by name.
   */
  @ParameterizedTest
  @MethodSource("matrix")
  void extraEnv_replacesTheChartsVariableOfTheSameName(String values) {
    Rendered chartOnly = Chart.render(values);
    List<String> names = chartOnly.weir().getEnv().stream().map(EnvVar::getName).toList();
    String overrides =
        "extraEnv: [{name: WEIR_PEER_DISCOVERY_TYPE, value: overridden},"
            + " {name: WEIR_K8S_POD_IP, value: overridden},"
            + " {name: WEIR_LOG_LEVEL, value: debug}]\n";
    Rendered r = Chart.render(values.replaceAll("(?m)^extraEnv:.*\n", "") + overrides);
    List<String> rendered = r.weir().getEnv().stream().map(EnvVar::getName).toList();

    assertThat(rendered).doesNotHaveDuplicates();
    assertThat(r.env())
        .containsEntry("WEIR_PEER_DISCOVERY_TYPE", "overridden")
        .containsEntry("WEIR_K8S_POD_IP", "overridden")
        .containsEntry("WEIR_LOG_LEVEL", "debug");
    assertThat(rendered.subList(rendered.size() - 3, rendered.size()))
        .containsExactly("WEIR_PEER_DISCOVERY_TYPE", "WEIR_K8S_POD_IP", "WEIR_LOG_LEVEL");
    assertThat(rendered.subList(0, rendered.size() - 3))
        .isEqualTo(
            names.stream()
                .filter(n -> !Set.of("WEIR_PEER_DISCOVERY_TYPE", "WEIR_K8S_POD_IP").contains(n))
                .filter(n -> !values.contains("name: " + n))
                .toList());
  }

  @ParameterizedTest
  @MethodSource("matrix")
  void helmTest_callsANodeThroughTheClientService(String values) {
    Rendered r = Chart.render(values);
    var pod = r.testPod();
    Service client = service(r, r.deployment().getMetadata().getName());
    int httpPort =
        client.getSpec().getPorts().stream()
            .filter(p -> p.getTargetPort().getStrVal().equals("http"))
            .findFirst()
            .orElseThrow()
            .getPort();
    List<String> args = pod.getSpec().getContainers().get(0).getArgs();
    String scheme = values.contains("tls:") ? "https" : "http";

    assertThat(pod.getMetadata().getAnnotations()).containsEntry(Chart.HOOK, "test");
    assertThat(pod.getSpec().getRestartPolicy()).isEqualTo("Never");
    assertThat(args.get(args.size() - 1))
        .isEqualTo(
            scheme + "://" + client.getMetadata().getName() + ":" + httpPort + "/v1/GetRateLimits");
    assertThat(args).contains("--fail");
    if (values.contains("require-and-verify")) {
      assertThat(args).contains("--cert", "--key");
    }
  }

  /** A registry that needs credentials for Weir's image needs them for the test image too. */
  @Test
  void helmTest_pullsWithTheReleasesImagePullSecrets() {
    Rendered r =
        Chart.render(
            "imagePullSecrets: [{name: regcred}]\n"
                + "tests: {image: {repository: registry.example/curl}}\n");

    assertThat(r.testPod().getSpec().getImagePullSecrets())
        .extracting(s -> s.getName())
        .containsExactly("regcred");
    assertThat(Chart.render("").testPod().getSpec().getImagePullSecrets()).isNullOrEmpty();
  }

  /**
   * The {@code helm test} pod is no peer: were it selected by the peers Services or the pods
   * watch, every node would add its IP to the ring while it runs.
   */
  @ParameterizedTest
  @MethodSource("matrix")
  void helmTest_podMatchesNoSelectorOfTheNodes(String values) {
    Rendered r = Chart.render(values + "podMonitor: {enabled: true}\n");
    Map<String, String> testLabels = r.testPod().getMetadata().getLabels();
    Map<String, Map<String, String>> selectors = new HashMap<>();
    for (Service s : r.all(Service.class)) {
      selectors.put("Service " + s.getMetadata().getName(), s.getSpec().getSelector());
    }
    selectors.put("Deployment", r.deployment().getSpec().getSelector().getMatchLabels());
    for (PodDisruptionBudget pdb : r.all(PodDisruptionBudget.class)) {
      selectors.put("PodDisruptionBudget", pdb.getSpec().getSelector().getMatchLabels());
    }
    for (NetworkPolicy np : r.all(NetworkPolicy.class)) {
      selectors.put("NetworkPolicy", np.getSpec().getPodSelector().getMatchLabels());
    }
    for (PodMonitor pm : r.all(PodMonitor.class)) {
      selectors.put("PodMonitor", pm.getSpec().getSelector().getMatchLabels());
    }
    String k8sSelector = r.env().get("WEIR_K8S_SELECTOR");
    if (k8sSelector != null) {
      Map<String, String> selector = new HashMap<>();
      for (String pair : k8sSelector.split(",")) {
        String[] kv = pair.split("=", 2);
        selector.put(kv[0], kv[1]);
      }
      selectors.put("WEIR_K8S_SELECTOR", selector);
    }

    assertThat(selectors).containsKeys("Deployment", "PodDisruptionBudget", "NetworkPolicy");
    if (values.contains("watchMechanism: pods")) {
      assertThat(selectors).containsKey("WEIR_K8S_SELECTOR");
    }
    selectors.forEach(
        (what, selector) -> {
          assertThat(selector).as(what).isNotEmpty();
          assertThat(testLabels.entrySet().containsAll(selector.entrySet()))
              .as("%s %s selects the test pod %s", what, selector, testLabels)
              .isFalse();
        });
    assertThat(testLabels).containsEntry("app.kubernetes.io/component", "test");
  }

  /**
   * A map or list value written empty in a values file ({@code podLabels:} with only a comment
   * under it) is null, which Helm drops from the values: the Deployment is the defaults'.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "podLabels: null\n",
        "podLabels:\n  # team: rl\n",
        "podAnnotations: null\n",
        "extraEnv: null\n",
        "extraEnvFrom: null\n",
        "imagePullSecrets: null\n",
        "nodeSelector: null\n",
        "tolerations: null\n",
        "affinity: null\n"
      })
  void nullMapOrListValue_rendersTheDefaultsDeployment(String values) {
    assertThat(Chart.render(values).deployment()).isEqualTo(Chart.render("").deployment());
  }

  /**
   * A pod label that changes a selector label would leave the pods outside the Deployment's
   * selector, which the API server refuses without naming podLabels.
   */
  @Test
  void podLabels_changingASelectorLabel_failsNamingIt_theSameValueOrOtherLabelsPass() {
    assertThatThrownBy(() -> Chart.render("podLabels: {app.kubernetes.io/name: rl}\n"))
        .hasMessageContaining("podLabels.app.kubernetes.io/name: \"rl\" is not valid")
        .hasMessageContaining("\"weir\"");

    Map<String, String> labels =
        Chart.render("podLabels: {app.kubernetes.io/instance: weir, team: rl}\n")
            .deployment()
            .getSpec()
            .getTemplate()
            .getMetadata()
            .getLabels();
    assertThat(labels)
        .containsEntry("app.kubernetes.io/instance", "weir")
        .containsEntry("team", "rl");
  }

  /**
   * A podLabels key the chart sets replaces the chart's label: written twice, the pod template
   * would repeat a key, which strict YAML parsers refuse ({@link Chart#parse} among them).
   */
  @Test
  void podLabels_namingAChartLabel_replaceIt_writtenOnce() {
    Rendered r = Chart.render("podLabels: {app.kubernetes.io/part-of: platform, team: rl}\n");

    assertThat(r.deployment().getSpec().getTemplate().getMetadata().getLabels())
        .containsEntry("app.kubernetes.io/part-of", "platform")
        .containsEntry("team", "rl");
    assertThat(r.deployment().getMetadata().getLabels())
        .containsEntry("app.kubernetes.io/part-of", "weir");
  }

  /** A rendered document that repeats a key fails the tests instead of keeping its last value. */
  @Test
  void parse_refusesARepeatedKey() {
    String doc =
        "# Source: weir/templates/x.yaml\n"
            + "apiVersion: v1\nkind: ConfigMap\n"
            + "metadata:\n  name: a\n  labels:\n    team: rl\n    team: ops\n";

    assertThatThrownBy(() -> Chart.parse(doc))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("weir/templates/x.yaml")
        .hasMessageContaining("team");
  }

  @Test
  void invalidValues_failNamingTheValueAndWhatIsAllowed() {
    assertThatThrownBy(() -> Chart.render("mode: envoy\n"))
        .hasMessageContaining("'/mode': value must be one of 'weir', 'ratelimit'");
    assertThatThrownBy(() -> Chart.render("tls: {enabled: true}\n"))
        .hasMessageContaining("tls.secretName");
    assertThatThrownBy(() -> Chart.render("discovery: {watchMechanism: endpoints}\n"))
        .hasMessageContaining("/discovery/watchMechanism")
        .hasMessageContaining("'endpointslices', 'pods'");
    assertThatThrownBy(() -> Chart.render(TLS + "mode: ratelimit\n"))
        .hasMessageContaining("mode=ratelimit");
  }

  @Test
  void valuesSchema_refusesMisspelledAndMistypedValues() {
    assertThatThrownBy(() -> Chart.render("replicacount: 3\n"))
        .hasMessageContaining("replicacount");
    assertThatThrownBy(() -> Chart.render("autoscaling: {enabeld: true}\n"))
        .hasMessageContaining("enabeld");
    assertThatThrownBy(() -> Chart.render("replicaCount: three\n"))
        .hasMessageContaining("replicaCount");
    assertThatThrownBy(() -> Chart.render("tls: {clientAuth: mutual}\n"))
        .hasMessageContaining("clientAuth");
  }

  private static Map<String, Set<String>> grants(Role role) {
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
    return grants;
  }

  /**
   * Istio injects its sidecar into the {@code helm test} pod too, where a sidecar that is not a
   * native one keeps running after curl exits: the pod never completes and {@code helm test} waits
   * out its timeout.
   */
  @Test
  void helmTest_noIstioSidecarInjected() {
    var pod = Chart.render("").testPod();

    assertThat(pod.getMetadata().getAnnotations()).containsEntry("sidecar.istio.io/inject", "false");
    assertThat(pod.getMetadata().getLabels()).containsEntry("sidecar.istio.io/inject", "false");
  }

  /**
   * A monitor label named like one of the chart's (Prometheus's selector often is {@code
   * app.kubernetes.io/part-of}) replaces it: written twice, the monitor would repeat a key, which
   * strict YAML parsers refuse ({@link Chart#parse} among them).
   */
  @Test
  void monitorLabels_namingAChartLabel_replaceIt_writtenOnce() {
    Rendered r =
        Chart.render(
            "serviceMonitor: {enabled: true, labels: {app.kubernetes.io/part-of: platform,"
                + " release: prom}}\n"
                + "podMonitor: {enabled: true, labels: {app.kubernetes.io/part-of: platform,"
                + " release: prom}}\n");

    for (HasMetadata monitor :
        List.<HasMetadata>of(r.only(ServiceMonitor.class), r.only(PodMonitor.class))) {
      assertThat(monitor.getMetadata().getLabels())
          .as(monitor.getKind())
          .containsEntry("app.kubernetes.io/part-of", "platform")
          .containsEntry("release", "prom")
          .containsEntry("app.kubernetes.io/name", "weir");
    }
  }

  /**
   * The status listener on a port the container already listens on would stop every pod at
   * start-up (the port is taken), and Kubernetes would refuse the container's repeated port.
   */
  @ParameterizedTest
  @ValueSource(ints = {1050, 1051, 1052})
  void mutualTls_statusPortOnAnotherListenersPort_failsNamingBoth(int port) {
    assertThatThrownBy(
            () ->
                Chart.render(
                    "tls: {enabled: true, secretName: weir-tls, clientAuth: require-and-verify,"
                        + " statusPort: "
                        + port
                        + "}\n"))
        .hasMessageContaining("tls.statusPort: " + port + " is not valid")
        .hasMessageContaining("1050 (http), 1051 (grpc) and 1052 (peer)");
    assertThat(Chart.render(TLS.replace("}", ", statusPort: 1051}")).weir().getPorts())
        .extracting(ContainerPort::getName)
        .containsExactly("grpc", "http", "peer");
  }

  /** The values that render a Weir duration variable, each as YAML around a value and its variable. */
  private static final List<List<String>> DURATION_VALUES =
      List.of(
          List.of("forwardStandInAfter: %s\n", "WEIR_FORWARD_STAND_IN_AFTER"),
          List.of("gracefulTerminationDelay: %s\n", "WEIR_GRACEFUL_TERMINATION_DELAY"),
          List.of(
              "discovery: {type: etcd, etcd: {endpoints: ['etcd:2379'], dialTimeout: %s}}\n",
              "WEIR_ETCD_DIAL_TIMEOUT"),
          List.of(
              "discovery: {type: etcd, etcd: {endpoints: ['etcd:2379'], leaseTtl: %s}}\n",
              "WEIR_ETCD_LEASE_TTL"));

  /**
   * A duration the node cannot read (no unit, a space, an unknown unit) would render and stop
   * every pod at start-up; the chart refuses it naming the value instead.
   */
  @ParameterizedTest
  @ValueSource(strings = {"'5'", "'5 s'", "5sec", "1d", "'1,5s'", "s"})
  void durations_theNodeCannotRead_refusedNamingTheValue(String duration) {
    for (List<String> value : DURATION_VALUES) {
      assertThatThrownBy(() -> Chart.render(value.get(0).formatted(duration)))
          .as(value.get(1))
          .hasMessageContaining("'" + duration.replace("'", "") + "'");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"10ms", "1m30s", "1.5s", "500us", "'0'", "2h", "'-0s'", "' 5s '"})
  void durations_inGoSyntax_renderedVerbatim(String duration) {
    for (List<String> value : DURATION_VALUES) {
      assertThat(Chart.render(value.get(0).formatted(duration)).env())
          .containsEntry(value.get(1), duration.replace("'", ""));
    }
  }

  /** etcd discovery from the chart's values, as README's table spells the variables. */
  @Test
  void etcdDiscovery_valuesSetTheEtcdVariables_andNoKubernetesDiscoveryObjects() {
    Rendered r =
        Chart.render(
            "discovery: {type: etcd, etcd: {endpoints: ['http://etcd-0.etcd:2379',"
                + " 'http://etcd-1.etcd:2379'], keyPrefix: /weir-prod/, dialTimeout: 2s,"
                + " leaseTtl: 10s, dataCenter: eu-1, user: weir,"
                + " passwordSecret: {name: etcd-auth, key: pw}}}\n");

    assertThat(r.env())
        .containsEntry("WEIR_PEER_DISCOVERY_TYPE", "etcd")
        .containsEntry("WEIR_ETCD_ENDPOINTS", "http://etcd-0.etcd:2379,http://etcd-1.etcd:2379")
        .containsEntry("WEIR_ETCD_KEY_PREFIX", "/weir-prod/")
        .containsEntry("WEIR_ETCD_DIAL_TIMEOUT", "2s")
        .containsEntry("WEIR_ETCD_LEASE_TTL", "10s")
        .containsEntry("WEIR_ETCD_DATA_CENTER", "eu-1")
        .containsEntry("WEIR_ETCD_USER", "weir")
        .containsEntry("WEIR_ETCD_PASSWORD", "secretKeyRef:etcd-auth/pw")
        .containsEntry("WEIR_K8S_POD_IP", "fieldRef:status.podIP")
        .doesNotContainKeys(
            "WEIR_K8S_NAMESPACE", "WEIR_K8S_SERVICE_NAME", "WEIR_DNS_FQDN", "WEIR_ADVERTISE_ADDRESS");
    assertThat(r.all(Role.class)).isEmpty();
    assertThat(r.all(Service.class))
        .extracting(s -> s.getMetadata().getName())
        .containsExactly("weir");
    assertThat(r.only(ServiceAccount.class).getAutomountServiceAccountToken()).isFalse();
  }

  /** A Secret's name and key that YAML would read as a boolean or a number stay strings. */
  @Test
  void etcdDiscovery_passwordSecretNameAndKey_quoted() {
    Rendered r =
        Chart.render(
            "discovery: {type: etcd, etcd: {endpoints: ['etcd:2379'], user: weir,"
                + " passwordSecret: {name: 'on', key: '0123'}}}\n");

    assertThat(r.env()).containsEntry("WEIR_ETCD_PASSWORD", "secretKeyRef:on/0123");
    assertThatThrownBy(
            () ->
                Chart.render(
                    "discovery: {type: etcd, etcd: {endpoints: ['etcd:2379'], user: weir,"
                        + " passwordSecret: {name: etcd-auth, key: ''}}}\n"))
        .hasMessageContaining("/discovery/etcd/passwordSecret/key");
  }

  /** Weir reads WEIR_ETCD_PASSWORD only with WEIR_ETCD_USER: a password alone would be unused. */
  @Test
  void etcdDiscovery_passwordSecretWithoutUser_failsNamingBoth() {
    assertThatThrownBy(
            () ->
                Chart.render(
                    "discovery: {type: etcd, etcd: {endpoints: ['etcd:2379'],"
                        + " passwordSecret: {name: etcd-auth}}}\n"))
        .hasMessageContaining(
            "discovery.etcd.passwordSecret.name: \"etcd-auth\" is not valid with"
                + " discovery.etcd.user: \"\"");
    assertThat(
            Chart.render(
                    "discovery: {type: etcd, etcd: {endpoints: ['etcd:2379'],"
                        + " passwordSecret: {name: etcd-auth}}}\n"
                        + "extraEnv: [{name: WEIR_ETCD_USER, valueFrom: {secretKeyRef:"
                        + " {name: etcd-auth, key: user}}}]\n")
                .env())
        .containsEntry("WEIR_ETCD_PASSWORD", "secretKeyRef:etcd-auth/password");
  }

  @Test
  void etcdDiscovery_unsetValuesLeaveWeirsDefaults_butOneKeyPrefixPerRelease_andEndpointsRequired() {
    Rendered r = Chart.render("discovery: {type: etcd, etcd: {endpoints: ['etcd:2379']}}\n");

    assertThat(r.env().keySet())
        .filteredOn(n -> n.startsWith("WEIR_ETCD_"))
        .containsExactlyInAnyOrder("WEIR_ETCD_ENDPOINTS", "WEIR_ETCD_KEY_PREFIX");
    assertThat(r.env()).containsEntry("WEIR_ETCD_KEY_PREFIX", "/weir/weir/weir/");
    assertThat(
            Chart.render("other", "weir", "discovery: {type: etcd, etcd: {endpoints: [e:2379]}}\n")
                .env())
        .containsEntry("WEIR_ETCD_KEY_PREFIX", "/weir/weir/other-weir/");
    assertThatThrownBy(() -> Chart.render("discovery: {type: etcd}\n"))
        .hasMessageContaining("discovery.etcd.endpoints: [] is not valid with discovery.type=etcd")
        .hasMessageContaining("host:port");
  }

  /** etcd TLS from a Secret of the user's: mounted read-only, its files named as README names them. */
  @Test
  void etcdTls_secretWithCaAndClientCertificate_mountedAndTheEtcdTlsVariablesSet() {
    Rendered r =
        Chart.render(
            "discovery: {type: etcd, etcd: {endpoints: ['https://etcd:2379'],"
                + " tls: {secretName: etcd-client, ca: ca.crt, cert: tls.crt, key: '0123'}}}\n");

    assertThat(r.env())
        .containsEntry("WEIR_ETCD_TLS_CA", "/etc/weir/etcd-tls/ca.crt")
        .containsEntry("WEIR_ETCD_TLS_CERT", "/etc/weir/etcd-tls/tls.crt")
        .containsEntry("WEIR_ETCD_TLS_KEY", "/etc/weir/etcd-tls/tls.key");
    Volume volume =
        r.deployment().getSpec().getTemplate().getSpec().getVolumes().stream()
            .filter(v -> v.getName().equals("etcd-tls"))
            .findFirst()
            .orElseThrow();
    assertThat(volume.getSecret().getSecretName()).isEqualTo("etcd-client");
    assertThat(volume.getSecret().getItems())
        .extracting(KeyToPath::getKey, KeyToPath::getPath)
        .containsExactly(
            tuple("ca.crt", "ca.crt"), tuple("tls.crt", "tls.crt"), tuple("0123", "tls.key"));
    assertThat(r.weir().getVolumeMounts())
        .filteredOn(m -> m.getName().equals("etcd-tls"))
        .extracting(VolumeMount::getMountPath, VolumeMount::getReadOnly)
        .containsExactly(tuple("/etc/weir/etcd-tls", true));
  }

  @Test
  void etcdTls_caAlone_onlyTheCaMountedAndNamed_andNothingWithoutASecret() {
    Rendered r =
        Chart.render(
            "discovery: {type: etcd, etcd: {endpoints: ['etcd:2379'],"
                + " tls: {secretName: etcd-ca, ca: ca.crt}}}\n");
    Rendered none = Chart.render("discovery: {type: etcd, etcd: {endpoints: ['etcd:2379']}}\n");

    assertThat(r.env()).containsEntry("WEIR_ETCD_TLS_CA", "/etc/weir/etcd-tls/ca.crt");
    assertThat(r.env()).doesNotContainKeys("WEIR_ETCD_TLS_CERT", "WEIR_ETCD_TLS_KEY");
    assertThat(none.env().keySet()).noneMatch(n -> n.startsWith("WEIR_ETCD_TLS_"));
    assertThat(none.deployment().getSpec().getTemplate().getSpec().getVolumes())
        .extracting(Volume::getName)
        .doesNotContain("etcd-tls");
  }

  /** Half-configured etcd TLS fails to render, naming the value and what to set instead. */
  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "secretName: etcd-client"
            + " | discovery.etcd.tls.secretName: \"etcd-client\" is not valid without"
            + " discovery.etcd.tls.ca or discovery.etcd.tls.cert and key",
        "ca: ca.crt"
            + " | discovery.etcd.tls.ca: \"ca.crt\" is not valid with"
            + " discovery.etcd.tls.secretName: \"\": expected the name of the Secret",
        "secretName: etcd-client, cert: tls.crt"
            + " | discovery.etcd.tls.cert: \"tls.crt\" is not valid with"
            + " discovery.etcd.tls.key: \"\": expected both",
        "secretName: etcd-client, ca: ca.crt, key: tls.key"
            + " | discovery.etcd.tls.key: \"tls.key\" is not valid with"
            + " discovery.etcd.tls.cert: \"\": expected both",
      })
  void etcdTls_halfConfigured_failsNamingTheValueAndWhatIsExpected(String tls, String message) {
    assertThatThrownBy(
            () ->
                Chart.render(
                    "discovery: {type: etcd, etcd: {endpoints: ['etcd:2379'], tls: {"
                        + tls
                        + "}}}\n"))
        .hasMessageContaining(message);
  }

  @Test
  void etcdTls_withPlaintextEndpoint_failsAsWeirWouldAtStart() {
    assertThatThrownBy(
            () ->
                Chart.render(
                    "discovery: {type: etcd, etcd: {endpoints: ['http://etcd:2379'],"
                        + " tls: {secretName: etcd-ca, ca: ca.crt}}}\n"))
        .hasMessageContaining(
            "discovery.etcd.tls.secretName: \"etcd-ca\" is not valid with the http:// endpoint"
                + " \"http://etcd:2379\"");
  }

  @Test
  void etcdTls_alsoInExtraEnv_failsNamingBoth() {
    assertThatThrownBy(
            () ->
                Chart.render(
                    "discovery: {type: etcd, etcd: {endpoints: ['etcd:2379'],"
                        + " tls: {secretName: etcd-ca, ca: ca.crt}}}\n"
                        + "extraEnv: [{name: WEIR_ETCD_TLS_CA, value: /etc/etcd-tls/ca.crt}]\n"))
        .hasMessageContaining(
            "extraEnv: WEIR_ETCD_TLS_CA is not valid with discovery.etcd.tls.secretName:"
                + " \"etcd-ca\", which sets it from discovery.etcd.tls.ca; expected that key or"
                + " this variable, not both");
  }

  @Test
  void etcdTls_certFromSecret_caFromExtraEnv_renders() {
    Rendered r =
        Chart.render(
            "discovery: {type: etcd, etcd: {endpoints: ['etcd:2379'],"
                + " tls: {secretName: etcd-client, cert: tls.crt, key: tls.key}}}\n"
                + "extraVolumes: [{name: etcd-ca, configMap: {name: etcd-ca-bundle}}]\n"
                + "extraVolumeMounts: [{name: etcd-ca, mountPath: /etc/etcd-ca,"
                + " readOnly: true}]\n"
                + "extraEnv: [{name: WEIR_ETCD_TLS_CA, value: /etc/etcd-ca/ca.crt}]\n");

    assertThat(r.env())
        .containsEntry("WEIR_ETCD_TLS_CA", "/etc/etcd-ca/ca.crt")
        .containsEntry("WEIR_ETCD_TLS_CERT", "/etc/weir/etcd-tls/tls.crt")
        .containsEntry("WEIR_ETCD_TLS_KEY", "/etc/weir/etcd-tls/tls.key");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "ca: ca.crt | GUBER_ETCD_TLS_CA | ca",
        "cert: tls.crt, key: tls.key | WEIR_ETCD_TLS_CERT | cert",
        "cert: tls.crt, key: tls.key | GUBER_ETCD_TLS_KEY | key",
      })
  void etcdTls_variableTheChartSetsAlsoInExtraEnv_failsNamingBoth(
      String files, String name, String key) {
    assertThatThrownBy(
            () ->
                Chart.render(
                    "discovery: {type: etcd, etcd: {endpoints: ['etcd:2379'],"
                        + " tls: {secretName: etcd-client, "
                        + files
                        + "}}}\n"
                        + "extraEnv: [{name: "
                        + name
                        + ", value: /etc/etcd-tls/x}]\n"))
        .hasMessageContaining(
            "extraEnv: " + name + " is not valid with discovery.etcd.tls.secretName")
        .hasMessageContaining("which sets it from discovery.etcd.tls." + key + ";");
  }

  /** Volumes of {@code extraVolumes} are mounted in the container after the chart's own. */
  @Test
  void extraVolumes_mountedInTheContainer_afterTheChartsOwn() {
    Rendered r =
        Chart.render(
            "discovery: {type: etcd, etcd: {endpoints: ['https://etcd:2379']}}\n"
                + "extraVolumes: [{name: etcd-tls, secret: {secretName: etcd-client}}]\n"
                + "extraVolumeMounts: [{name: etcd-tls, mountPath: /etc/etcd-tls,"
                + " readOnly: true}]\n"
                + "extraEnv: [{name: WEIR_ETCD_TLS_CA, value: /etc/etcd-tls/ca.crt}]\n");

    List<Volume> volumes = r.deployment().getSpec().getTemplate().getSpec().getVolumes();
    assertThat(volumes).extracting(Volume::getName).endsWith("etcd-tls").contains("tmp");
    assertThat(volumes.get(volumes.size() - 1).getSecret().getSecretName())
        .isEqualTo("etcd-client");
    assertThat(r.weir().getVolumeMounts())
        .filteredOn(m -> m.getName().equals("etcd-tls"))
        .extracting(VolumeMount::getMountPath, VolumeMount::getReadOnly)
        .containsExactly(tuple("/etc/etcd-tls", true));
    assertThat(r.env()).containsEntry("WEIR_ETCD_TLS_CA", "/etc/etcd-tls/ca.crt");
  }

  private static String checksum(Rendered r) {
    return r.deployment()
        .getSpec()
        .getTemplate()
        .getMetadata()
        .getAnnotations()
        .get("checksum/config");
  }

  /** The Services whose labels {@code sm} selects and that have the port it scrapes. */
  private static List<Service> scrapedServices(Rendered r, ServiceMonitor sm) {
    Map<String, String> selector = sm.getSpec().getSelector().getMatchLabels();
    String port = sm.getSpec().getEndpoints().get(0).getPort();
    return r.all(Service.class).stream()
        .filter(s -> s.getMetadata().getLabels().entrySet().containsAll(selector.entrySet()))
        .filter(s -> s.getSpec().getPorts().stream().anyMatch(p -> p.getName().equals(port)))
        .toList();
  }

  /**
   * The {@code job} label Prometheus Operator gives the samples {@code sm} scrapes through {@code
   * s}: the Service's name, else the value of its label {@code jobLabel}, then the endpoint's
   * relabelings that set {@code job}.
   */
  private static String job(ServiceMonitor sm, Service s) {
    String job = s.getMetadata().getName();
    String jobLabel = sm.getSpec().getJobLabel();
    if (jobLabel != null
        && !jobLabel.isEmpty()
        && s.getMetadata().getLabels().containsKey(jobLabel)) {
      job = s.getMetadata().getLabels().get(jobLabel);
    }
    var relabelings = sm.getSpec().getEndpoints().get(0).getRelabelings();
    for (var relabel : relabelings == null ? List.<RelabelConfig>of() : relabelings) {
      if ("job".equals(relabel.getTargetLabel())) {
        boolean constant =
            (relabel.getSourceLabels() == null || relabel.getSourceLabels().isEmpty())
                && (relabel.getAction() == null || relabel.getAction().equals("replace"));
        assertThat(constant).as("a relabeling of job this test reads: %s", relabel).isTrue();
        job = relabel.getReplacement();
      }
    }
    return job;
  }

  private static Service service(Rendered r, String name) {
    return r.all(Service.class).stream()
        .filter(s -> s.getMetadata().getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no Service " + name));
  }

  private static int port(Container c, String name) {
    return c.getPorts().stream()
        .filter(p -> p.getName().equals(name))
        .map(ContainerPort::getContainerPort)
        .findFirst()
        .orElse(-1);
  }
}
