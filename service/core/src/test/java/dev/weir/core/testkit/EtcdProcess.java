package dev.weir.core.testkit;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A throwaway etcd server process on free loopback ports, restartable on the same ports and data;
 * shared with other modules' tests through the weir-core test-jar.
 */
public final class EtcdProcess implements AutoCloseable {
  private final Path dataDir;
  private final int clientPort;
  private final int peerPort;
  private Process process;

  private EtcdProcess(Path dataDir, int clientPort, int peerPort) {
    this.dataDir = dataDir;
    this.clientPort = clientPort;
    this.peerPort = peerPort;
  }

  /** Returns whether an {@code etcd} executable is on the PATH. */
  public static boolean available() {
    String path = System.getenv().getOrDefault("PATH", "");
    return Stream.of(path.split(File.pathSeparator))
        .anyMatch(dir -> Files.isExecutable(Path.of(dir, "etcd")));
  }

  /** Starts etcd on free ports with a fresh data directory. */
  public static EtcdProcess start() throws IOException, InterruptedException {
    EtcdProcess etcd = new EtcdProcess(Files.createTempDirectory("weir-etcd"), freePort(), freePort());
    etcd.restart();
    return etcd;
  }

  /** Returns the client URL. */
  public String endpoint() {
    return "http://127.0.0.1:" + clientPort;
  }

  /** Stops the process (SIGKILL, as a crash would) and waits for it to exit. */
  public void stop() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
      process = null;
    }
  }

  /** Starts the process again on the same ports and data, and waits until it accepts connections. */
  public void restart() throws IOException, InterruptedException {
    String peerUrl = "http://127.0.0.1:" + peerPort;
    process =
        new ProcessBuilder(
                List.of(
                    "etcd",
                    "--name", "weir-test",
                    "--data-dir", dataDir.resolve("data").toString(),
                    "--listen-client-urls", endpoint(),
                    "--advertise-client-urls", endpoint(),
                    "--listen-peer-urls", peerUrl,
                    "--initial-advertise-peer-urls", peerUrl,
                    "--initial-cluster", "weir-test=" + peerUrl))
            .redirectErrorStream(true)
            .redirectOutput(dataDir.resolve("etcd.log").toFile())
            .start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IOException("etcd exited: " + Files.readString(dataDir.resolve("etcd.log")));
      }
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", clientPort), 200);
        return;
      } catch (IOException notYet) {
        Thread.sleep(50);
      }
    }
    throw new IOException("etcd did not listen on " + endpoint() + " within 15s");
  }

  @Override
  public void close() throws InterruptedException, IOException {
    stop();
    try (Stream<Path> files = Files.walk(dataDir)) {
      files.sorted(Comparator.reverseOrder()).forEach(EtcdProcess::delete);
    }
  }

  private static void delete(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Returns a port that was free a moment ago. */
  public static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
