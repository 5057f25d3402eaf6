import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Slow-client attack on a Weir HTTP port, with legitimate traffic measured alongside: the tool of
 * docs/reliability.md, "Slow and idle HTTP clients". Loopback only; bounded in time.
 *
 * <p>Usage: {@code java scripts/SlowClients.java PORT MODE SECONDS [CONNECTIONS]}, MODE one of
 * {@code none}, {@code headers} (each connection sends a request line, then one header line every
 * 5 s and never ends its head), {@code body} (each sends a whole head announcing a 1 MB body,
 * then one byte every 5 s) or {@code idle} (each connects and sends nothing). A connection the server closes is opened again at the next tick. The
 * legitimate client sends 10 requests per second, each on a new connection with a 2 s limit,
 * alternating {@code GET /v1/LiveCheck} and a one-item {@code POST /v1/GetRateLimits}, and prints
 * how many got an answer, the failures by kind, the latency percentiles, and how many attack
 * connections the server closed.
 */
public final class SlowClients {

  private static final String HOST = "127.0.0.1";
  private static final byte[] RATE_LIMIT_BODY =
      ("{\"requests\":[{\"name\":\"slow\",\"unique_key\":\"k\",\"hits\":1,\"limit\":1000000,"
              + "\"duration\":60000}]}")
          .getBytes(StandardCharsets.US_ASCII);

  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    String mode = args[1];
    int seconds = Integer.parseInt(args[2]);
    int connections = args.length > 3 ? Integer.parseInt(args[3]) : 500;
    Attack attack = new Attack(port, mode, connections);
    ScheduledExecutorService timer = Executors.newScheduledThreadPool(4);
    if (!mode.equals("none")) {
      attack.openAll();
      timer.scheduleWithFixedDelay(attack::tick, 5, 5, TimeUnit.SECONDS);
      Thread.sleep(2000);
    }
    Legit legit = new Legit(port);
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    int sent = 0;
    long start = System.nanoTime();
    while (System.nanoTime() < end) {
      int index = sent++;
      timer.execute(() -> legit.once(index % 2 == 0));
      long next = start + TimeUnit.MILLISECONDS.toNanos(100L * sent);
      long wait = next - System.nanoTime();
      if (wait > 0) {
        TimeUnit.NANOSECONDS.sleep(wait);
      }
    }
    timer.shutdown();
    timer.awaitTermination(10, TimeUnit.SECONDS);
    System.out.println(legit.report(mode, connections, attack));
    attack.closeAll();
  }

  /** The slow connections. */
  static final class Attack {
    private final int port;
    private final String mode;
    private final List<SocketChannel> sockets = new ArrayList<>();
    private final AtomicInteger closedByServer = new AtomicInteger();
    private final AtomicInteger refusedConnects = new AtomicInteger();
    private int ticks;

    Attack(int port, String mode, int count) {
      this.port = port;
      this.mode = mode;
      for (int i = 0; i < count; i++) {
        sockets.add(null);
      }
    }

    void openAll() {
      for (int i = 0; i < sockets.size(); i++) {
        sockets.set(i, open());
      }
    }

    private SocketChannel open() {
      try {
        SocketChannel channel = SocketChannel.open(new InetSocketAddress(HOST, port));
        channel.configureBlocking(false);
        String head =
            switch (mode) {
              case "headers" -> "POST /v1/GetRateLimits HTTP/1.1\r\nHost: weir\r\n";
              case "body" ->
                  "POST /v1/GetRateLimits HTTP/1.1\r\nHost: weir\r\nContent-Type: application/json"
                      + "\r\nContent-Length: 1000000\r\n\r\n{";
              default -> "";
            };
        channel.write(ByteBuffer.wrap(head.getBytes(StandardCharsets.US_ASCII)));
        return channel;
      } catch (IOException e) {
        refusedConnects.incrementAndGet();
        return null;
      }
    }

    synchronized void tick() {
      ticks++;
      ByteBuffer scratch = ByteBuffer.allocate(4096);
      for (int i = 0; i < sockets.size(); i++) {
        SocketChannel channel = sockets.get(i);
        boolean alive = channel != null;
        try {
          if (alive) {
            scratch.clear();
            int read = channel.read(scratch);
            if (read == -1 || read > 0) {
              alive = false;
            } else if (!mode.equals("idle")) {
              String more = mode.equals("headers") ? "X-Slow-" + ticks + ": 1\r\n" : " ";
              channel.write(ByteBuffer.wrap(more.getBytes(StandardCharsets.US_ASCII)));
            }
          }
        } catch (IOException e) {
          alive = false;
        }
        if (!alive) {
          if (channel != null) {
            closedByServer.incrementAndGet();
            closeQuietly(channel);
          }
          sockets.set(i, open());
        }
      }
    }

    synchronized int openCount() {
      return (int) sockets.stream().filter(s -> s != null).count();
    }

    synchronized void closeAll() {
      sockets.forEach(SlowClients::closeQuietly);
    }
  }

  /** The legitimate client. */
  static final class Legit {
    private final int port;
    private final List<Long> latencies = Collections.synchronizedList(new ArrayList<>());
    private final AtomicInteger ok = new AtomicInteger();
    private final AtomicInteger refused503 = new AtomicInteger();
    private final AtomicInteger otherStatus = new AtomicInteger();
    private final AtomicInteger timeouts = new AtomicInteger();
    private final AtomicInteger resets = new AtomicInteger();

    Legit(int port) {
      this.port = port;
    }

    void once(boolean probe) {
      long start = System.nanoTime();
      try (Socket socket = new Socket()) {
        socket.connect(new InetSocketAddress(HOST, port), 2000);
        socket.setSoTimeout(2000);
        OutputStream out = socket.getOutputStream();
        String head =
            probe
                ? "GET /v1/LiveCheck HTTP/1.1\r\nHost: weir\r\nConnection: close\r\n\r\n"
                : "POST /v1/GetRateLimits HTTP/1.1\r\nHost: weir\r\nConnection: close\r\n"
                    + "Content-Type: application/json\r\nContent-Length: "
                    + RATE_LIMIT_BODY.length
                    + "\r\n\r\n";
        out.write(head.getBytes(StandardCharsets.US_ASCII));
        if (!probe) {
          out.write(RATE_LIMIT_BODY);
        }
        out.flush();
        int status = statusOf(socket.getInputStream());
        if (status == 200) {
          ok.incrementAndGet();
          latencies.add(System.nanoTime() - start);
        } else if (status == 503) {
          refused503.incrementAndGet();
        } else if (status == -1) {
          resets.incrementAndGet();
        } else {
          otherStatus.incrementAndGet();
        }
      } catch (java.net.SocketTimeoutException e) {
        timeouts.incrementAndGet();
      } catch (IOException e) {
        resets.incrementAndGet();
      }
    }

    private static int statusOf(InputStream in) throws IOException {
      StringBuilder line = new StringBuilder();
      int c;
      while ((c = in.read()) != -1 && c != '\n') {
        line.append((char) c);
      }
      String[] parts = line.toString().split(" ");
      return parts.length >= 2 && parts[0].startsWith("HTTP/") ? Integer.parseInt(parts[1]) : -1;
    }

    String report(String mode, int connections, Attack attack) {
      List<Long> sorted = new ArrayList<>(latencies);
      Collections.sort(sorted);
      int total = ok.get() + refused503.get() + otherStatus.get() + timeouts.get() + resets.get();
      return String.format(
          "mode=%s attackers=%d legit=%d ok=%d (%.1f%%) 503=%d other=%d timeouts=%d resets=%d"
              + " p50=%.1fms p99=%.1fms attack_closed_by_server=%d attack_refused_connects=%d"
              + " attack_open_at_end=%d",
          mode,
          mode.equals("none") ? 0 : connections,
          total,
          ok.get(),
          total == 0 ? 0.0 : 100.0 * ok.get() / total,
          refused503.get(),
          otherStatus.get(),
          timeouts.get(),
          resets.get(),
          percentile(sorted, 0.50),
          percentile(sorted, 0.99),
          attack.closedByServer.get(),
          attack.refusedConnects.get(),
          mode.equals("none") ? 0 : attack.openCount());
    }

    private static double percentile(List<Long> sorted, double p) {
      if (sorted.isEmpty()) {
        return Double.NaN;
      }
      int index = Math.min(sorted.size() - 1, (int) Math.ceil(p * sorted.size()) - 1);
      return sorted.get(Math.max(0, index)) / 1e6;
    }
  }

  private static void closeQuietly(SocketChannel channel) {
    if (channel == null) {
      return;
    }
    try {
      channel.close();
    } catch (IOException ignored) {
      // the connection is being dropped anyway
    }
  }
}
