package dev.weir.e2e.netns;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
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
