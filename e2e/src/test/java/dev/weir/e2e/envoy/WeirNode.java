package dev.weir.e2e.envoy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One Weir server process started from the packaged {@code weir.jar} (system property {@code
 * weir.jar}, set by the e2e pom for failsafe), listening on loopback ports chosen at start, with
 * its output in a log file.
 */
public final class WeirNode implements AutoCloseable {
  private static final long STOP_GRACE_SECONDS = 20;

  private final String name;
  private final int grpcPort;
  private final int httpPort;
  private final Path log;
  private final Process process;

  private WeirNode(String name, int grpcPort, int httpPort, Path log, Process process) {
    this.name = name;
    this.grpcPort = grpcPort;
    this.httpPort = httpPort;
    this.log = log;
    this.process = process;
  }

  /** Returns the path of the packaged server jar, failing with the reason when it is missing. */
  public static Path jar() {
    String property = System.getProperty("weir.jar");
    if (property == null || property.isBlank()) {
      throw new IllegalStateException(
          "system property weir.jar is not set (the e2e pom sets it for failsafe)");
    }
    Path jar = Path.of(property);
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException(
          jar + " does not exist; build it with ./mvnw -pl e2e -am verify");
    }
    return jar;
  }

  /** Returns a TCP port on 127.0.0.1 that was free a moment ago. */
  public static int freePort() {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Starts a node on the given loopback ports, with no {@code WEIR_*}/{@code GUBER_*} variable
   * inherited from the test's environment. {@code env} adds to (or overrides) the listen and
   * advertise addresses this method sets: {@code WEIR_GRPC_ADDRESS}, {@code WEIR_HTTP_ADDRESS},
   * {@code WEIR_ADVERTISE_ADDRESS}.
   */
  public static WeirNode start(
      String name, int grpcPort, int httpPort, Map<String, String> env, Path logDir) {
    try {
      Files.createDirectories(logDir);
      Path log = logDir.resolve(name + ".log");
      List<String> command = new ArrayList<>();
      command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      command.addAll(dev.weir.e2e.TestJvm.FLAGS);
      command.add("-jar");
      command.add(jar().toString());
      ProcessBuilder builder =
          new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
      builder
          .environment()
          .keySet()
          .removeIf(var -> var.startsWith("WEIR_") || var.startsWith("GUBER_"));
      builder.environment().put("WEIR_GRPC_ADDRESS", "127.0.0.1:" + grpcPort);
      builder.environment().put("WEIR_HTTP_ADDRESS", "127.0.0.1:" + httpPort);
      builder.environment().put("WEIR_ADVERTISE_ADDRESS", "127.0.0.1:" + grpcPort);
      builder.environment().putAll(env);
      return new WeirNode(name, grpcPort, httpPort, log, builder.start());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Returns the node's name (its log file's name). */
  public String name() {
    return name;
  }

  /** Returns the gRPC port (Gubernator V1, peers and Envoy's RateLimitService). */
  public int grpcPort() {
    return grpcPort;
  }

  /** Returns the HTTP port. */
  public int httpPort() {
    return httpPort;
  }

  /** Returns {@code 127.0.0.1:<grpc port>}. */
  public String grpcAddress() {
    return "127.0.0.1:" + grpcPort;
  }

  /** Returns whether the process is still running. */
  public boolean isAlive() {
    return process.isAlive();
  }

  /** Returns the last lines of the node's output, for failure messages. */
  public String logTail() {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return name
          + " ("
          + log
          + "):\n"
          + String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    } catch (IOException e) {
      return name + ": log unreadable: " + e;
    }
  }

  /**
   * Stops the process: SIGTERM, then a forced kill if it has not exited within the grace period.
   */
  @Override
  public void close() {
    if (!process.isAlive()) {
      return;
    }
    process.destroy();
    try {
      if (!process.waitFor(STOP_GRACE_SECONDS, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(STOP_GRACE_SECONDS, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}
