package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
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
  void turnOff_keepsTheRecyclerSizedByMaxCapacity() {
    Properties properties = new Properties();
    properties.setProperty("io.netty.recycler.maxCapacity", "4096");

    NettyRecycling.turnOff(properties);

    assertThat(properties)
        .containsEntry("io.grpc.netty.shaded.io.netty.recycler.maxCapacityPerThread", "0")
        .doesNotContainKey("io.netty.recycler.maxCapacityPerThread");
  }

  @Test
  void mainLoaded_beforeNetty_bothNettiesHandOutNewObjects() throws Exception {
    assertThat(probe(true)).isEqualTo("shaded=new unshaded=new");
  }

  @Test
  void mainNotLoaded_bothNettiesRecycle() throws Exception {
    assertThat(probe(false)).isEqualTo("shaded=recycled unshaded=recycled");
  }

  /** Runs {@link RecyclerProbe} in a JVM of its own, where no Netty class has loaded yet. */
  private static String probe(boolean loadMain) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(RecyclerProbe.class.getName());
    command.add(Boolean.toString(loadMain));
    Path log = Files.createTempFile("recycler-probe", ".log");
    Process process =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    try {
      assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
      String output = Files.readString(log);
      assertThat(process.exitValue()).as(output).isZero();
      return output.lines().reduce((first, last) -> last).orElse("");
    } finally {
      process.destroyForcibly();
      Files.deleteIfExists(log);
    }
  }
}
