package dev.weir.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.helm.Chart;
import dev.weir.helm.Rendered;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Helm chart's container, as rendered, run as a real {@code weir.jar}: its variables and their
 * values are accepted without a warning, its descriptor ConfigMap laid out at its mount path loads,
 * its probes' paths answer 200 on the ports they name, and the {@code helm test} pod's curl command
 * gets a decision. Only what needs a cluster is replaced: the listeners bind loopback ports instead
 * of the pod's, the mounts are directories here, and static discovery of this node alone stands in
 * for the Kubernetes API.
 */
class ChartJarIT {
  private final HttpClient http = HttpClient.newHttpClient();

  @ParameterizedTest
  @ValueSource(strings = {"weir", "ratelimit"})
  void renderedContainer_startsAnswersItsProbesAndTheHelmTest(String mode, @TempDir Path dir)
      throws Exception {
    Assumptions.assumeTrue(curlInstalled(), "curl is not installed: the helm test pod runs curl");
    Rendered chart = Chart.render("mode: " + mode + "\n");
    Container weir = chart.weir();
    int grpcPort = NodeProcess.freePort();
    int httpPort = NodeProcess.freePort();
    int peerPort = NodeProcess.freePort();
    Map<String, Integer> ports =
        Map.of(
            "grpc", grpcPort, "http", httpPort, "peer", peerPort, "debug", NodeProcess.freePort());
    Map<String, String> env = new HashMap<>();
    for (EnvVar e : weir.getEnv()) {
      if (e.getValue() != null && !e.getName().startsWith("WEIR_K8S_")) {
        env.put(e.getName(), local(e.getValue(), dir));
      }
    }
    Path secret = dir.resolve("etc/weir/peer/secret");
    Files.createDirectories(secret.getParent());
    Files.writeString(secret, "chart-jar-it-peer-secret-0123456789");
    for (Map.Entry<String, String> file : chart.only(ConfigMap.class).getData().entrySet()) {
      Path config = dir.resolve("etc/weir/config").resolve(file.getKey());
      Files.createDirectories(config.getParent());
      Files.writeString(config, file.getValue());
    }
    env.put("WEIR_PEER_DISCOVERY_TYPE", "static");
    env.put("WEIR_STATIC_PEERS", "127.0.0.1:" + grpcPort + "@" + peerPort);
    env.put("WEIR_PEER_ADDRESS", "127.0.0.1:" + peerPort);
    if (mode.equals("weir")) {
      env.put("WEIR_GRPC_ADDRESS", "127.0.0.1:" + grpcPort);
      env.put("WEIR_HTTP_ADDRESS", "127.0.0.1:" + httpPort);
    } else {
      env.putAll(
          Map.of(
              "HOST",
              "127.0.0.1",
              "PORT",
              Integer.toString(httpPort),
              "GRPC_HOST",
              "127.0.0.1",
              "GRPC_PORT",
              Integer.toString(grpcPort),
              "DEBUG_HOST",
              "127.0.0.1",
              "DEBUG_PORT",
              Integer.toString(ports.get("debug"))));
    }
    List<String> args = weir.getArgs() == null ? List.of() : weir.getArgs();

    try (NodeProcess node =
        NodeProcess.startIn(
            dir.resolve("logs"), grpcPort, httpPort, env, args.toArray(String[]::new))) {
      String readyPort = weir.getReadinessProbe().getHttpGet().getPort().getStrVal();
      node.awaitHealthy(
          http, probe(ports.get(readyPort), weir.getReadinessProbe().getHttpGet().getPath()));
      for (var probe :
          List.of(weir.getLivenessProbe().getHttpGet(), weir.getStartupProbe().getHttpGet())) {
        URI uri = probe(ports.get(probe.getPort().getStrVal()), probe.getPath());
        assertThat(
                http.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString())
                    .statusCode())
            .as(uri.toString())
            .isEqualTo(200);
      }

      List<String> curl =
          new ArrayList<>(chart.testPod().getSpec().getContainers().get(0).getCommand());
      List<String> curlArgs =
          new ArrayList<>(chart.testPod().getSpec().getContainers().get(0).getArgs());
      String url = curlArgs.remove(curlArgs.size() - 1);
      curl.addAll(curlArgs);
      curl.add(url.replaceFirst("//[^/]+/", "//127.0.0.1:" + httpPort + "/"));
      Process call = new ProcessBuilder(curl).redirectErrorStream(true).start();
      assertThat(call.waitFor(60, TimeUnit.SECONDS)).isTrue();
      String answer = new String(call.getInputStream().readAllBytes(), StandardCharsets.UTF_8);

      assertThat(call.exitValue()).as(answer).isZero();
      assertThat(answer).contains("\"status\":\"UNDER_LIMIT\"", "\"remaining\":\"99\"");
      assertThat(node.stdout() + node.stderr())
          .as("a variable the chart sets that Weir does not read")
          .doesNotContain("is not a Weir setting")
          .doesNotContain("ignoring");
    }
  }

  private static boolean curlInstalled() {
    try {
      Process p = new ProcessBuilder("curl", "--version").start();
      return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** Rewrites the pod's paths under {@code /etc/weir} into {@code dir}. */
  private static String local(String value, Path dir) {
    return value.replace("/etc/weir", dir.resolve("etc/weir").toString());
  }

  private static URI probe(int port, String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }
}
