package dev.weir.e2e.netns;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

class NetLabIT {

  private static final int SUBNET = 42;

  @Test
  void create_labAKilledRunLeftOnTheSameSubnet_removedSoTheNewLabGetsTheSubnetsRoute()
      throws Exception {
    String why = NetLab.unavailable();
    if (why != null) {
      System.out.println("NetLabIT skipped: " + why);
    }
    Assumptions.assumeTrue(why == null, why);
    String stale = "w" + exitedPid() + "s" + SUBNET;
    NetLab.run("ip", "link", "add", stale + "br", "type", "bridge");
    NetLab.run("ip", "addr", "add", "10.213." + SUBNET + ".254/24", "dev", stale + "br");
    NetLab.run("ip", "link", "set", stale + "br", "up");
    NetLab.run("ip", "netns", "add", stale + "h1");
    try (NetLab lab = NetLab.create(1, SUBNET)) {
      assertThat(NetLab.run("ip", "-o", "link", "show")).doesNotContain(stale);
      assertThat(NetLab.run("ip", "netns", "list")).doesNotContain(stale);
      assertThat(NetLab.run("ip", "route", "get", lab.address(1)))
          .contains("dev w" + ProcessHandle.current().pid() + "s" + SUBNET + "br");
    } finally {
      quietly("ip", "netns", "del", stale + "h1");
      quietly("ip", "link", "del", stale + "br");
    }
  }

  @Test
  void create_aKilledRunsNodeStillInItsNamespace_killedWithTheNamespace() throws Exception {
    String why = NetLab.unavailable();
    if (why != null) {
      System.out.println("NetLabIT skipped: " + why);
    }
    Assumptions.assumeTrue(why == null, why);
    String stale = "w" + exitedPid() + "s" + SUBNET;
    NetLab.run("ip", "netns", "add", stale + "h1");
    Process left = new ProcessBuilder("ip", "netns", "exec", stale + "h1", "sleep", "600").start();
    try {
      awaitIn(stale + "h1", left.pid());
      try (NetLab lab = NetLab.create(1, SUBNET)) {
        assertThat(left.waitFor(1, TimeUnit.SECONDS)).as("the leftover process was killed").isTrue();
        assertThat(NetLab.run("ip", "netns", "list"))
            .doesNotContain(stale)
            .contains(lab.namespace(1));
      }
    } finally {
      left.destroyForcibly();
      quietly("ip", "netns", "del", stale + "h1");
    }
  }

  @Test
  void close_aProcessStillRunningInAHost_killedWithTheNamespace() throws Exception {
    String why = NetLab.unavailable();
    if (why != null) {
      System.out.println("NetLabIT skipped: " + why);
    }
    Assumptions.assumeTrue(why == null, why);
    Process node;
    try (NetLab lab = NetLab.create(1, SUBNET)) {
      node = new ProcessBuilder(lab.inHost(1, List.of("sleep", "600"))).start();
      awaitIn(lab.namespace(1), node.pid());
    }
    try {
      assertThat(node.waitFor(1, TimeUnit.SECONDS)).as("the host's process was killed").isTrue();
    } finally {
      node.destroyForcibly();
    }
  }

  // Waits until `ip netns pids` lists pid in namespace ns (`ip netns exec` has entered it).
  private static void awaitIn(String ns, long pid) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    String pids = "";
    while (System.nanoTime() < deadline) {
      pids = NetLab.run("ip", "netns", "pids", ns);
      if (pids.lines().anyMatch(line -> line.strip().equals(Long.toString(pid)))) {
        return;
      }
      TimeUnit.MILLISECONDS.sleep(20);
    }
    throw new AssertionError("pid " + pid + " not in " + ns + " within 10 s: " + pids);
  }

  // The pid of a process that has exited: a JVM killed mid-run leaves one behind in lab names.
  private static long exitedPid() throws Exception {
    Process p = new ProcessBuilder("true").start();
    p.waitFor();
    return p.pid();
  }

  private static void quietly(String... command) {
    try {
      NetLab.run(command);
    } catch (IOException e) {
      // Already gone.
    }
  }
}
