package dev.weir.envoy.metrics;

import dev.weir.core.logging.RateLimitedLogger;
import dev.weir.core.time.SystemClock;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.PortUnreachableException;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import org.slf4j.LoggerFactory;

/**
 * Writes StatsD lines to {@code host:port} over UDP, as many newline-terminated lines per datagram
 * as fit in {@value #MAX_DATAGRAM_BYTES} bytes (the reference's library's packet size). The address
 * is looked up when first needed and again after a failure; a datagram that cannot be sent is lost
 * (StatsD over UDP promises no delivery), with a warning at most once a minute. Nothing blocks: the
 * datagrams are written by the caller, the flush thread.
 */
final class StatsdSender implements Consumer<List<String>>, AutoCloseable {

  /** The most bytes of lines in one datagram. */
  static final int MAX_DATAGRAM_BYTES = 1432;

  private final String host;
  private final int port;
  private final RateLimitedLogger warnings =
      new RateLimitedLogger(
          LoggerFactory.getLogger(StatsdSender.class), SystemClock.INSTANCE, Duration.ofMinutes(1));
  private DatagramChannel channel;

  StatsdSender(String host, int port) {
    this.host = host;
    this.port = port;
  }

  @Override
  public synchronized void accept(List<String> lines) {
    ByteBuffer datagram = ByteBuffer.allocate(MAX_DATAGRAM_BYTES);
    for (String line : lines) {
      byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
      if (bytes.length > datagram.remaining() && datagram.position() > 0) {
        send(datagram);
      }
      if (bytes.length <= datagram.remaining()) {
        datagram.put(bytes);
      } else {
        send(ByteBuffer.wrap(bytes).position(bytes.length));
      }
    }
    if (datagram.position() > 0) {
      send(datagram);
    }
  }

  private void send(ByteBuffer datagram) {
    datagram.flip();
    try {
      if (channel == null) {
        channel = connected();
      }
      channel.write(datagram);
    } catch (PortUnreachableException nobodyListening) {
      // a connected UDP socket reports an earlier datagram's rejection; StatsD is best effort
    } catch (IOException | RuntimeException e) {
      warnings.warn("statsd", "cannot send stats to StatsD at {}:{}: {}", host, port, e.toString());
      close();
    }
    datagram.clear();
  }

  // A channel that cannot connect (an unresolvable host) is closed, not left to the cleaner.
  private DatagramChannel connected() throws IOException {
    DatagramChannel opened = DatagramChannel.open();
    try {
      return opened.connect(new InetSocketAddress(host, port));
    } catch (IOException | RuntimeException e) {
      opened.close();
      throw e;
    }
  }

  @Override
  public synchronized void close() {
    if (channel != null) {
      try {
        channel.close();
      } catch (IOException e) {
        LoggerFactory.getLogger(StatsdSender.class).debug("closing the StatsD socket", e);
      }
      channel = null;
    }
  }
}
