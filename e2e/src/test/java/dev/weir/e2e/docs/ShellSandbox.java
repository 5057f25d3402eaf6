package dev.weir.e2e.docs;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs a bash script from the repository root as a reader would run a README example, with the
 * fixed ports it names: in a network namespace of its own with a private {@code /tmp} (so it cannot
 * clash with other processes on this machine, and every process it starts ends with it) when {@code
 * unshare} allows one, else directly when all {@link #PORTS} are free; otherwise the test is
 * skipped. {@code WEIR_*}/{@code GUBER_*} variables are removed from its environment and the test's
 * JDK comes first on its {@code PATH}.
 */
final class ShellSandbox {

  /** The ports the README examples bind. */
  static final List<Integer> PORTS = List.of(1050, 1051, 1052, 2050, 2051, 2052, 3050, 3051, 3052);

  private static final List<String> NAMESPACE =
      List.of(
          "unshare",
          "--net",
          "--mount",
          "--map-root-user",
          "--fork",
          "--pid",
          "--mount-proc",
          "--kill-child");

  private static final String PRIVATE_TMP = "mount -t tmpfs tmpfs /tmp && ip link set lo up";

  /**
   * The outcome of a script.
   *
   * @param status its exit status
   * @param stdout what it wrote to stdout
   * @param stderr what it wrote to stderr
   */
  record Result(int status, String stdout, String stderr) {}

  private final Path root;
  private final boolean isolated;
  private final String setup;

  private ShellSandbox(Path root, boolean isolated) {
    this.root = root;
    this.isolated = isolated;
    this.setup = namespaceSetup(root);
  }

  /** Returns whether scripts run in a namespace of their own, with a private {@code /tmp}. */
  boolean isolated() {
    return isolated;
  }

  /**
   * Returns the commands that give the namespace its private {@code /tmp}: a checkout that itself
   * lives under {@code /tmp} (a clone made with {@code mktemp -d}) is bound to a private mount first
   * and bound back at its own path inside the new {@code /tmp}, so that the scripts and the JVMs
   * they start still find it by its absolute path.
   */
  static String namespaceSetup(Path root) {
    Path checkout = root.toAbsolutePath().normalize();
    if (!checkout.startsWith("/tmp")) {
      return PRIVATE_TMP;
    }
    String path = "'" + checkout.toString().replace("'", "'\\''") + "'";
    return "mount -t tmpfs tmpfs /mnt && mkdir /mnt/checkout && mount --bind "
        + path
        + " /mnt/checkout && "
        + PRIVATE_TMP
        + " && mkdir -p "
        + path
        + " && mount --bind /mnt/checkout "
        + path;
  }

  /**
   * Returns a sandbox for scripts run from {@code root}; skips the test when bash or curl is
   * missing, or when no namespace can be made and a README port is taken.
   */
  static ShellSandbox at(Path root) throws Exception {
    assumeTrue(
        succeeds(List.of("bash", "-c", "command -v curl && command -v openssl")),
        "the README examples need bash, curl and openssl");
    boolean isolated =
        succeeds(concat(NAMESPACE, List.of("bash", "-c", namespaceSetup(root) + " && true")));
    if (!isolated) {
      assumeTrue(
          PORTS.stream().allMatch(ShellSandbox::isFree),
          "no network namespace (unshare) and a README port " + PORTS + " is taken");
    }
    return new ShellSandbox(root, isolated);
  }

  /** Runs {@code script} with bash, killing it and what it started after {@code timeout}. */
  Result run(String script, Duration timeout) throws Exception {
    List<String> command =
        isolated
            ? concat(NAMESPACE, List.of("bash", "-c", setup + " && " + script))
            : List.of("bash", "-c", script);
    Path dir = Files.createTempDirectory("weir-readme");
    Path out = dir.resolve("stdout");
    Path err = dir.resolve("stderr");
    ProcessBuilder builder =
        new ProcessBuilder(command)
            .directory(root.toFile())
            .redirectOutput(out.toFile())
            .redirectError(err.toFile());
    builder
        .environment()
        .keySet()
        .removeIf(name -> name.startsWith("WEIR_") || name.startsWith("GUBER_"));
    Path javaBin = Path.of(System.getProperty("java.home"), "bin");
    builder.environment().merge("PATH", javaBin.toString(), (path, jdk) -> jdk + ":" + path);
    Process process = builder.start();
    try {
      if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new IllegalStateException(
            "script did not end within "
                + timeout
                + ": "
                + Files.readString(out)
                + Files.readString(err));
      }
    } finally {
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
    }
    return new Result(
        process.exitValue(),
        Files.readString(out, StandardCharsets.UTF_8),
        Files.readString(err, StandardCharsets.UTF_8));
  }

  private static boolean succeeds(List<String> command) {
    try {
      Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
      process.getInputStream().transferTo(java.io.OutputStream.nullOutputStream());
      return process.waitFor(30, TimeUnit.SECONDS) && process.exitValue() == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private static boolean isFree(int port) {
    try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }
}
