package dev.weir.e2e;

import java.util.List;

/** How the end-to-end tests start a {@code weir.jar} process. */
public final class TestJvm {

  /**
   * JVM flags of the nodes these tests start: short-lived processes that answer a few hundred calls
   * are cheaper on a 2-core CI machine with the client compiler alone and the serial collector.
   */
  public static final List<String> FLAGS =
      List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m");

  private TestJvm() {}
}
