package dev.weir.e2e.netns;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A small network of Linux network namespaces for fault tests, in the manner of Jepsen on one
 * machine: each host is a namespace with one interface ({@code eth0}, address {@code 10.213.N.i}
 * on a /24) joined to a bridge in the root namespace, which also has an address on that subnet, so
 * that clients in the root namespace reach every host.
 *
 * <p>Faults are iptables rules inside the hosts' namespaces ({@link Fault} lists them with their
 * exact commands), so they cut traffic between hosts and never between a host and the clients
 * unless asked. {@link #close()} kills the processes left in the namespaces and deletes the
 * namespaces and the bridge; names carry the test JVM's pid and the subnet, and {@link #create}
 * first removes what an earlier lab on the same subnet left behind when its JVM is gone (a killed
 * run), its processes included: its bridge would still hold the subnet's route and take the new
 * lab's traffic. Needs root and {@code ip} and {@code iptables} (Debian's iproute2 and iptables);
 * {@link #unavailable()} says why a lab cannot be built here.
 */
public final class NetLab implements AutoCloseable {

  private static final long TIMEOUT_SECONDS = 20;

  private final String prefix;
  private final int subnet;
  private final List<String> hosts = new ArrayList<>();

  private NetLab(String prefix, int subnet) {
    this.prefix = prefix;
    this.subnet = subnet;
  }

  /**
   * Returns why no lab can be built on this machine (not root, a command missing, namespaces
   * refused), or null when one can.
   */
  public static String unavailable() {
    if (!"root".equals(System.getProperty("user.name"))) {
      return "network namespace tests need root (running as "
          + System.getProperty("user.name")
          + ")";
    }
    for (String tool : List.of("ip", "iptables")) {
      if (!onPath(tool)) {
        return "network namespace tests need '" + tool + "' (Debian: iproute2, iptables)";
      }
    }
    String probe = "weirprobe" + ProcessHandle.current().pid();
    try {
      run("ip", "netns", "add", probe);
      run("ip", "netns", "exec", probe, "iptables", "-L", "INPUT");
      return null;
    } catch (IOException e) {
      return "cannot use network namespaces and iptables here: " + e.getMessage();
    } finally {
      quietly("ip", "netns", "del", probe);
    }
  }

  /** Builds a lab of {@code count} hosts on subnet {@code 10.213.subnet.0/24}. */
  public static NetLab create(int count, int subnet) throws IOException {
    NetLab lab = new NetLab("w" + ProcessHandle.current().pid() + "s" + subnet, subnet);
    lab.removeLeftovers();
    try {
      run("ip", "link", "add", lab.bridge(), "type", "bridge");
      run("ip", "addr", "add", "10.213." + subnet + ".254/24", "dev", lab.bridge());
      run("ip", "link", "set", lab.bridge(), "up");
      for (int i = 1; i <= count; i++) {
        String ns = lab.prefix + "h" + i;
        String veth = lab.prefix + "v" + i;
        run("ip", "netns", "add", ns);
        lab.hosts.add(ns);
        run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns);
        run("ip", "link", "set", veth, "master", lab.bridge());
        run("ip", "link", "set", veth, "up");
        run("ip", "netns", "exec", ns, "ip", "addr", "add", lab.address(i) + "/24", "dev", "eth0");
        run("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up");
        run("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up");
      }
      return lab;
    } catch (IOException | RuntimeException e) {
      lab.close();
      throw e;
    }
  }

  /** Returns host {@code i}'s address (hosts are numbered from 1). */
  public String address(int i) {
    return "10.213." + subnet + "." + i;
  }

  /** Returns host {@code i}'s namespace name. */
  public String namespace(int i) {
    return hosts.get(i - 1);
  }

  /** Returns {@code command} prefixed to run inside host {@code i}'s namespace. */
  public List<String> inHost(int i, List<String> command) {
    List<String> out = new ArrayList<>(List.of("ip", "netns", "exec", namespace(i)));
    out.addAll(command);
    return out;
  }

  /** The faults a lab can inject, each one or more iptables rules in the hosts' namespaces. */
  public enum Fault {
    /**
     * Host a's packets to b are dropped on leaving a and b's to a on leaving b: {@code iptables -A
     * OUTPUT -d <b> -j DROP} in a, and the same for a in b (TCP connections between them fail both
     * ways; both still reach every other host and the clients).
     */
    CUT,
    /**
     * Only host a's packets to b are dropped ({@code iptables -A OUTPUT -d <b> -j DROP} in a): b's
     * packets reach a, but no TCP connection between them completes either way.
     */
    ONE_WAY,
    /**
     * Each packet between a and b is dropped with probability 0.3, both ways ({@code iptables -A
     * OUTPUT -d <b> -m statistic --mode random --probability 0.3 -j DROP} in a, and the same for a
     * in b): a lossy, flapping link.
     */
    LOSSY
  }

  /** Injects {@code fault} between hosts {@code a} and {@code b}. */
  public void inject(Fault fault, int a, int b) throws IOException {
    switch (fault) {
      case CUT -> {
        drop(a, b);
        drop(b, a);
      }
      case ONE_WAY -> drop(a, b);
      case LOSSY -> {
        lossy(a, b);
        lossy(b, a);
      }
    }
  }

  /**
   * Cuts host {@code a} from every other host, both ways ({@link Fault#CUT} with each); clients in
   * the root namespace still reach it and it still reaches them.
   */
  public void isolate(int a) throws IOException {
    for (int b = 1; b <= hosts.size(); b++) {
      if (b != a) {
        inject(Fault.CUT, a, b);
      }
    }
  }

  /** Removes every fault from every host. */
  public void heal() throws IOException {
    for (int i = 1; i <= hosts.size(); i++) {
      run(inHost(i, List.of("iptables", "-F", "OUTPUT")).toArray(String[]::new));
    }
  }

  private void drop(int from, int to) throws IOException {
    run(
        inHost(from, List.of("iptables", "-A", "OUTPUT", "-d", address(to), "-j", "DROP"))
            .toArray(String[]::new));
  }

  private void lossy(int from, int to) throws IOException {
    run(
        inHost(
                from,
                List.of(
                    "iptables", "-A", "OUTPUT", "-d", address(to), "-m", "statistic", "--mode",
                    "random", "--probability", "0.3", "-j", "DROP"))
            .toArray(String[]::new));
  }

  /**
   * Kills the processes still running in the hosts' namespaces, then deletes the namespaces and the
   * bridge.
   */
  @Override
  public void close() {
    // A namespace lives on while a process is in it (`ip netns del` only removes its name), with
    // its addresses, sockets and the process itself: a node the test did not stop would keep
    // running, unreachable by name, so its processes are killed first.
    hosts.forEach(NetLab::killProcessesIn);
    // Deleting a namespace frees its veth pair in the background, so the next lab could find the
    // root-side name still taken; deleting the pair first frees both ends at once.
    for (int i = 1; i <= hosts.size(); i++) {
      quietly("ip", "link", "del", prefix + "v" + i);
    }
    for (String ns : hosts) {
      quietly("ip", "netns", "del", ns);
    }
    hosts.clear();
    quietly("ip", "link", "del", bridge());
  }

  // Removes the veths, namespaces and bridges of labs on this subnet made by this JVM or by one that
  // is gone, in that order (a veth first frees both its ends at once), after killing the processes
  // left in those namespaces (a killed run's nodes).
  private void removeLeftovers() throws IOException {
    Pattern ours = Pattern.compile("w(\\d+)s" + subnet + "(v\\d+|h\\d+|br)");
    List<String> veths = new ArrayList<>();
    List<String> namespaces = new ArrayList<>();
    List<String> bridges = new ArrayList<>();
    List<String> names = new ArrayList<>();
    run("ip", "-o", "link", "show").lines().forEach(l -> names.add(linkName(l)));
    run("ip", "netns", "list").lines().forEach(l -> names.add(l.split(" ", 2)[0]));
    for (String name : names) {
      Matcher m = ours.matcher(name);
      if (!m.matches() || !leftBehind(Long.parseLong(m.group(1)))) {
        continue;
      }
      String part = m.group(2);
      (part.startsWith("v") ? veths : part.startsWith("h") ? namespaces : bridges).add(name);
    }
    namespaces.forEach(NetLab::killProcessesIn);
    veths.forEach(v -> quietly("ip", "link", "del", v));
    namespaces.forEach(ns -> quietly("ip", "netns", "del", ns));
    bridges.forEach(b -> quietly("ip", "link", "del", b));
  }

  // Sends SIGKILL to every process in namespace ns (`ip netns pids`) and waits up to
  // TIMEOUT_SECONDS for them to be gone; a namespace that no longer exists has none.
  private static void killProcessesIn(String ns) {
    List<ProcessHandle> killed = new ArrayList<>();
    String pids;
    try {
      pids = run("ip", "netns", "pids", ns);
    } catch (IOException e) {
      return;
    }
    pids.lines()
        .map(String::strip)
        .filter(pid -> pid.matches("\\d+"))
        .map(Long::parseLong)
        .filter(pid -> pid != ProcessHandle.current().pid())
        .flatMap(pid -> ProcessHandle.of(pid).stream())
        .forEach(
            p -> {
              p.destroyForcibly();
              killed.add(p);
            });
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
    for (ProcessHandle p : killed) {
      try {
        p.onExit().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (ExecutionException | TimeoutException e) {
        // Still there: deleting the namespace's name is all that is left to do.
      }
    }
  }

  // The interface name in a line of `ip -o link show`: "7: name@peer: <FLAGS> ...".
  private static String linkName(String line) {
    String[] parts = line.split(": ", 3);
    return parts.length < 2 ? "" : parts[1].split("@", 2)[0];
  }

  private static boolean leftBehind(long pid) {
    return pid == ProcessHandle.current().pid() || ProcessHandle.of(pid).isEmpty();
  }

  private String bridge() {
    return prefix + "br";
  }

  private static boolean onPath(String tool) {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
      if (Files.isExecutable(Path.of(dir, tool))) {
        return true;
      }
    }
    return Files.isExecutable(Path.of("/usr/sbin", tool))
        || Files.isExecutable(Path.of("/sbin", tool));
  }

  /**
   * Runs {@code command} and returns its output; fails with its exit code and output when it does
   * not exit 0 in time.
   */
  static String run(String... command) throws IOException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    try {
      if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException(
            String.join(" ", command) + ": no exit within " + TIMEOUT_SECONDS + " s");
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IOException(String.join(" ", command) + ": interrupted", e);
    }
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    if (p.exitValue() != 0) {
      throw new IOException(String.join(" ", command) + " exited " + p.exitValue() + ": " + output);
    }
    return output;
  }

  private static void quietly(String... command) {
    try {
      run(command);
    } catch (IOException e) {
      // Nothing to remove.
    }
  }
}
