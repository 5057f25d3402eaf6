package dev.weir.envoy.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Lines leave in UDP datagrams of at most the reference's packet size, none split. */
class StatsdSenderTest {

  private static String receive(DatagramSocket socket) throws Exception {
    DatagramPacket packet = new DatagramPacket(new byte[65_536], 65_536);
    socket.receive(packet);
    return new String(packet.getData(), 0, packet.getLength(), StandardCharsets.UTF_8);
  }

  @Test
  void accept_packsWholeLinesIntoDatagramsOfAtMost1432Bytes() throws Exception {
    try (DatagramSocket socket = new DatagramSocket(0, InetAddress.getLoopbackAddress());
        StatsdSender sender = new StatsdSender("127.0.0.1", socket.getLocalPort())) {
      socket.setSoTimeout(10_000);
      List<String> lines = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        lines.add("ratelimit.service.rate_limit.domain.key_value_" + i + ".total_hits:" + i + "|c");
      }

      sender.accept(lines);

      List<String> received = new ArrayList<>();
      while (received.size() < lines.size()) {
        String datagram = receive(socket);
        assertThat(datagram.getBytes(StandardCharsets.UTF_8).length)
            .isLessThanOrEqualTo(StatsdSender.MAX_DATAGRAM_BYTES);
        assertThat(datagram).endsWith("\n");
        received.addAll(List.of(datagram.split("\n")));
      }
      assertThat(received).containsExactlyElementsOf(lines);
    }
  }

  @Test
  void accept_nobodyListening_losesTheLinesQuietlyAndKeepsSending() throws Exception {
    int port;
    try (DatagramSocket closed = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
      port = closed.getLocalPort();
    }
    try (StatsdSender sender = new StatsdSender("127.0.0.1", port)) {
      sender.accept(List.of("a:1|c"));
      sender.accept(List.of("a:1|c"));

      try (DatagramSocket socket = new DatagramSocket(port, InetAddress.getLoopbackAddress())) {
        socket.setSoTimeout(10_000);
        sender.accept(List.of("b:2|c"));
        assertThat(receive(socket)).isEqualTo("b:2|c\n");
      }
    }
  }

  @Test
  void accept_cannotConnect_leavesNoSocketOpenPerDatagram() throws Exception {
    Path fds = Path.of("/proc/self/fd");
    assumeTrue(Files.isDirectory(fds), "needs /proc/self/fd to count open sockets");
    try (StatsdSender sender = new StatsdSender("127.0.0.1", 0)) {
      long before = count(fds);

      for (int i = 0; i < 200; i++) {
        sender.accept(List.of("a:1|c"));
      }

      assertThat(count(fds) - before).as("file descriptors opened and left").isLessThan(20);
    }
  }

  private static long count(Path fds) throws Exception {
    try (Stream<Path> open = Files.list(fds)) {
      return open.count();
    }
  }
}
