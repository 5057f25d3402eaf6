package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class NettyRecyclingTest {

  @Test
  void turnOff_setsEveryRecyclerCapacityToZero() {
    Properties properties = new Properties();

    NettyRecycling.turnOff(properties);

    assertThat(properties)
        .containsEntry("io.grpc.netty.shaded.io.netty.recycler.maxCapacityPerThread", "0")
        .containsEntry("io.netty.recycler.maxCapacityPerThread", "0");
  }

  @Test
  void turnOff_keepsWhatTheCommandLineSet() {
    Properties properties = new Properties();
    properties.setProperty("io.grpc.netty.shaded.io.netty.recycler.maxCapacityPerThread", "4096");

    NettyRecycling.turnOff(properties);

    assertThat(properties)
        .containsEntry("io.grpc.netty.shaded.io.netty.recycler.maxCapacityPerThread", "4096")
        .containsEntry("io.netty.recycler.maxCapacityPerThread", "0");
  }

  @Test
  void turnOff_beforeNettyLoads_bothNettiesHandOutNewObjects() throws Exception {
    assertThat(probe(true)).isEqualTo("shaded=new unshaded=new");
  }

  @Test
  void withoutTurnOff_bothNettiesRecycle() throws Exception {
    assertThat(probe(false)).isEqualTo("shaded=recycled unshaded=recycled");
  }

  /** Runs {@link RecyclerProbe} in a JVM of its own, where no Netty class has loaded yet. */
  private static String probe(boolean turnOff) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(RecyclerProbe.class.getName());
    command.add(Boolean.toString(turnOff));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(process.exitValue()).as(output).isZero();
    return output.lines().reduce((first, last) -> last).orElse("");
  }
}
