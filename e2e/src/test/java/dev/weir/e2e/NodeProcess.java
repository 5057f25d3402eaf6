package dev.weir.e2e;

import dev.weir.core.testkit.FreePorts;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A {@code weir.jar} process started by a test on loopback ports the test chose, with its stdout
 * and stderr captured to files and no {@code WEIR_*}/{@code GUBER_*} variable inherited from the
 * test's environment.
 */
public final class NodeProcess implements AutoCloseable {

  /** The peer secret the test clusters share ({@code WEIR_PEER_SECRET}). */
  static final String PEER_SECRET = "weir-e2e-cluster-peer-secret";

  /** How long a node may take to answer its first health check. */
  private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

  /** How long one health request of {@link #awaitHealthy} may wait for its answer. */
  private static final Duration HEALTH_REQUEST_TIMEOUT = Duration.ofSeconds(2);

  final int grpcPort;
  final int httpPort;
  private final Process process;
  private final Path stdout;
  private final Path stderr;

  private NodeProcess(int grpcPort, int httpPort, Process process, Path stdout, Path stderr) {
    this.grpcPort = grpcPort;
    this.httpPort = httpPort;
    this.process = process;
    this.stdout = stdout;
    this.stderr = stderr;
  }

  /** Returns the built jar, from the {@code weir.jar} system property that e2e/pom.xml sets. */
  static Path jar() {
    String path = System.getProperty("weir.jar");
    if (path == null) {
      throw new IllegalStateException("system property weir.jar is not set; run through failsafe");
    }
    return Path.of(path);
  }

  /**
   * Starts {@code java -jar weir.jar args} with free loopback ports and {@code env} added. Nodes
   * start without the warm-up ({@code WEIR_WARMUP=0s}, which would take up to 30 s each) unless
   * {@code env} sets {@code WEIR_WARMUP}.
   */
  static NodeProcess start(Map<String, String> env, String... args) throws IOException {
    return start(freePort(), freePort(), env, args);
  }

  /** Starts {@code java -jar weir.jar args} on the given loopback ports with {@code env} added. */
  static NodeProcess start(int grpcPort, int httpPort, Map<String, String> env, String... args)
      throws IOException {
    return startIn(Files.createTempDirectory("weir-node"), grpcPort, httpPort, env, args);
  }

  /**
   * Starts {@code java -jar weir.jar args} on the given loopback ports with {@code env} added,
   * writing {@code stdout.log} and {@code stderr.log} in {@code dir} (created if missing).
   */
  public static NodeProcess startIn(
      Path dir, int grpcPort, int httpPort, Map<String, String> env, String... args)
      throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(TestJvm.FLAGS);
    command.add("-jar");
    command.add(jar().toString());
    command.addAll(List.of(args));
    Files.createDirectories(dir);
    Path out = dir.resolve("stdout.log");
    Path err = dir.resolve("stderr.log");
    ProcessBuilder builder =
        new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
    builder
        .environment()
        .keySet()
        .removeIf(name -> name.startsWith("WEIR_") || name.startsWith("GUBER_"));
    builder.environment().put("WEIR_GRPC_ADDRESS", "127.0.0.1:" + grpcPort);
    builder.environment().put("WEIR_HTTP_ADDRESS", "127.0.0.1:" + httpPort);
    builder.environment().put("WEIR_WARMUP", "0s");
    builder.environment().putAll(env);
    return new NodeProcess(grpcPort, httpPort, builder.start(), out, err);
  }

  /**
   * Starts a member of a test cluster on the given loopback ports: {@code WEIR_PEER_ADDRESS} at
   * {@code peerPort} and the cluster's {@link #PEER_SECRET}, with {@code env} added.
   */
  static NodeProcess startMember(
      int grpcPort, int httpPort, int peerPort, Map<String, String> env, String... args)
      throws IOException {
    Map<String, String> member = new java.util.HashMap<>();
    member.put("WEIR_PEER_ADDRESS", "127.0.0.1:" + peerPort);
    member.put("WEIR_PEER_SECRET", PEER_SECRET);
    member.putAll(env);
    return start(grpcPort, httpPort, member, args);
  }

  /**
   * Returns {@code WEIR_STATIC_PEERS} for members on loopback with {@code grpcPorts} and, at the
   * same index, {@code peerPorts}: {@code 127.0.0.1:grpc@peer,...}.
   */
  static String staticPeers(int[] grpcPorts, int[] peerPorts) {
    List<String> entries = new ArrayList<>();
    for (int i = 0; i < grpcPorts.length; i++) {
      entries.add("127.0.0.1:" + grpcPorts[i] + "@" + peerPorts[i]);
    }
    return String.join(",", entries);
  }

  /** Returns the gRPC port. */
  public int grpcPort() {
    return grpcPort;
  }

  /** Returns the HTTP port. */
  public int httpPort() {
    return httpPort;
  }

  /** Returns whether the process is still running. */
  public boolean isAlive() {
    return process.isAlive();
  }

  /** Returns the last lines of the process's stdout and stderr, for failure messages. */
  public String logTail() {
    return tail(stdout) + "\n" + tail(stderr);
  }

  private static String tail(Path file) {
    try {
      List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
      return file
          + ":\n"
          + String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    } catch (IOException e) {
      return file + ": unreadable: " + e;
    }
  }

  /**
   * Stops the process: SIGTERM, then SIGKILL if it has not exited within {@code grace}; does
   * nothing when it has exited already.
   */
  public void stop(Duration grace) {
    process.destroy();
    try {
      if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly().waitFor(grace.toMillis(), TimeUnit.MILLISECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  /** Returns a loopback port that was free a moment ago; see {@link FreePorts}. */
  public static int freePort() throws IOException {
    return FreePorts.next();
  }

  /** Polls {@code GET /v1/HealthCheck} until it answers 200; fails if the process exits first. */
  void awaitHealthy(HttpClient client) throws Exception {
    awaitHealthy(client, httpUri("/v1/HealthCheck"));
  }

  /**
   * Polls {@code GET healthCheck} until it answers 200; fails if the process exits first. Each
   * request waits at most {@link #HEALTH_REQUEST_TIMEOUT}, so a node that accepts connections but
   * does not answer (paused, or stuck) is asked again rather than waited for past the deadline.
   */
  void awaitHealthy(HttpClient client, URI healthCheck) throws Exception {
    long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
    HttpRequest request =
        HttpRequest.newBuilder(healthCheck).timeout(HEALTH_REQUEST_TIMEOUT).build();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException(
            "node exited with " + process.exitValue() + ": " + stderr() + stdout());
      }
      try {
        if (client.send(request, HttpResponse.BodyHandlers.ofString()).statusCode() == 200) {
          return;
        }
      } catch (IOException notYetListening) {
        // the listener is not up yet, or the request timed out (HttpTimeoutException)
      }
      Thread.sleep(100);
    }
    throw new IllegalStateException("node not healthy within " + START_TIMEOUT + ": " + stdout());
  }

  /** Polls {@code GET /readyz} until it answers 200; fails if the process exits first. */
  void awaitReady(HttpClient client) throws Exception {
    awaitHealthy(client, httpUri("/readyz"));
  }

  /** Sends the signal {@code name} (e.g. {@code STOP}, {@code CONT}) to the process. */
  void signal(String name) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).start();
    if (kill.waitFor() != 0) {
      throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
    }
  }

  /** Sends SIGKILL and waits for the process to be gone. */
  void kill() throws InterruptedException {
    process.destroyForcibly().waitFor();
  }

  /** Returns {@code http://127.0.0.1:<httpPort><path>}. */
  URI httpUri(String path) {
    return URI.create("http://127.0.0.1:" + httpPort + path);
  }

  /** Sends SIGTERM and returns at once; {@link #terminate} then waits for the exit. */
  void sigterm() {
    process.destroy();
  }

  /** Sends SIGTERM and returns the exit status, waiting up to {@code timeout}. */
  int terminate(Duration timeout) throws InterruptedException {
    process.destroy();
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      process.destroyForcibly();
      throw new IllegalStateException("node did not exit within " + timeout + " of SIGTERM");
    }
    return process.exitValue();
  }

  /** Sends SIGINT, as Ctrl-C does, and returns the exit status, waiting up to {@code timeout}. */
  int interrupt(Duration timeout) throws IOException, InterruptedException {
    new ProcessBuilder("kill", "-INT", Long.toString(process.pid())).start().waitFor();
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      process.destroyForcibly();
      throw new IllegalStateException("node did not exit within " + timeout + " of SIGINT");
    }
    return process.exitValue();
  }

  /** Waits for the process to exit on its own and returns its status. */
  int awaitExit(Duration timeout) throws InterruptedException {
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      process.destroyForcibly();
      throw new IllegalStateException("node did not exit within " + timeout);
    }
    return process.exitValue();
  }

  /** Returns what the process wrote to stdout so far. */
  String stdout() throws IOException {
    return Files.readString(stdout, StandardCharsets.UTF_8);
  }

  /** Returns what the process wrote to stderr so far. */
  String stderr() throws IOException {
    return Files.readString(stderr, StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    process.destroyForcibly();
  }
}
