import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.bootstrap.Bootstrap;
import io.grpc.netty.shaded.io.netty.bootstrap.ServerBootstrap;
import io.grpc.netty.shaded.io.netty.buffer.ByteBuf;
import io.grpc.netty.shaded.io.netty.buffer.Unpooled;
import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.channel.ChannelInitializer;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollSocketChannel;
import io.grpc.netty.shaded.io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.grpc.netty.shaded.io.netty.util.ReferenceCountUtil;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * A benchmark of the CPU that one request-and-answer exchange between two processes costs, by transport:
 * the floor under any peer message a Weir front sends its owner (docs/benchmarks.md, "What any peer
 * transport costs on one core"). Loopback only; run by scripts/bench-transport-floor.sh.
 *
 * <p>Usage: {@code java -cp weir.jar scripts/TransportFloor.java server KIND PORT} and {@code java
 * -cp weir.jar scripts/TransportFloor.java client KIND PORT SIZE SERVER_PID WARMUP_S MEASURE_S},
 * KIND one of {@code socket} (blocking sockets, a 4-byte length before each message: the least a
 * JVM can pay), {@code netty} (Netty's epoll event loop and a length-prefixed frame: what a framing
 * of Weir's own on its event loops would pay) or {@code grpc} (one grpc-java bidirectional stream,
 * callbacks on the event loop: what Weir's {@code ForwardBatches} stream pays). The client keeps one
 * message of SIZE bytes in flight, which the server echoes, and after WARMUP_S seconds reads both
 * processes' CPU time and context switches from /proc for MEASURE_S seconds; it prints them per
 * exchange.
 */
public final class TransportFloor {

  private static final MethodDescriptor.Marshaller<byte[]> BYTES =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
          return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream in) {
          try {
            return in.readAllBytes();
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
      };

  private static final MethodDescriptor<byte[], byte[]> ECHO =
      MethodDescriptor.<byte[], byte[]>newBuilder()
          .setType(MethodDescriptor.MethodType.BIDI_STREAMING)
          .setFullMethodName("floor.Floor/Echo")
          .setRequestMarshaller(BYTES)
          .setResponseMarshaller(BYTES)
          .build();

  private static final double MICROS_PER_TICK = 1e6 / 100;

  public static void main(String[] args) throws Exception {
    String role = args[0];
    String kind = args[1];
    int port = Integer.parseInt(args[2]);
    if (role.equals("server")) {
      switch (kind) {
        case "socket" -> socketServer(port);
        case "netty" -> nettyServer(port);
        case "grpc" -> grpcServer(port);
        default -> throw new IllegalArgumentException("KIND must be socket, netty or grpc: " + kind);
      }
    } else {
      client(
          kind,
          port,
          Integer.parseInt(args[3]),
          Long.parseLong(args[4]),
          Double.parseDouble(args[5]),
          Double.parseDouble(args[6]));
    }
  }

  private static void socketServer(int port) throws IOException {
    try (ServerSocket listener = new ServerSocket(port)) {
      while (true) {
        Socket socket = listener.accept();
        socket.setTcpNoDelay(true);
        new Thread(() -> echo(socket)).start();
      }
    }
  }

  private static void echo(Socket socket) {
    try (DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        DataOutputStream out =
            new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()))) {
      while (true) {
        byte[] message = new byte[in.readInt()];
        in.readFully(message);
        out.writeInt(message.length);
        out.write(message);
        out.flush();
      }
    } catch (IOException closed) {
      // the client went away
    }
  }

  private static void nettyServer(int port) throws InterruptedException {
    new ServerBootstrap()
        .group(new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory()))
        .channel(EpollServerSocketChannel.class)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childHandler(
            framed(
                () -> new ChannelInboundHandlerAdapter() {
                  @Override
                  public void channelRead(ChannelHandlerContext ctx, Object frame) {
                    ctx.write(frame);
                  }

                  @Override
                  public void channelReadComplete(ChannelHandlerContext ctx) {
                    ctx.flush();
                  }
                }))
        .bind(port)
        .sync()
        .channel()
        .closeFuture()
        .sync();
  }

  private static ChannelInitializer<Channel> framed(Supplier<ChannelInboundHandlerAdapter> handler) {
    return new ChannelInitializer<>() {
      @Override
      protected void initChannel(Channel channel) {
        channel
            .pipeline()
            .addLast(new LengthFieldBasedFrameDecoder(1 << 20, 0, 4, 0, 0), handler.get());
      }
    };
  }

  private static void grpcServer(int port) throws Exception {
    ServerServiceDefinition service =
        ServerServiceDefinition.builder("floor.Floor")
            .addMethod(
                ECHO,
                ServerCalls.asyncBidiStreamingCall(
                    out ->
                        new StreamObserver<byte[]>() {
                          @Override
                          public void onNext(byte[] message) {
                            out.onNext(message);
                          }

                          @Override
                          public void onError(Throwable t) {}

                          @Override
                          public void onCompleted() {
                            out.onCompleted();
                          }
                        }))
            .build();
    NettyServerBuilder.forPort(port)
        .directExecutor()
        .addService(service)
        .build()
        .start()
        .awaitTermination();
  }

  private static void client(
      String kind, int port, int size, long serverPid, double warmup, double measure)
      throws Exception {
    byte[] message = new byte[size];
    AtomicLong exchanges = new AtomicLong();
    AtomicBoolean stop = new AtomicBoolean();
    switch (kind) {
      case "socket" -> socketClient(port, message, stop, exchanges);
      case "netty" -> nettyClient(port, message, stop, exchanges);
      case "grpc" -> grpcClient(port, message, stop, exchanges);
      default -> throw new IllegalArgumentException("KIND must be socket, netty or grpc: " + kind);
    }
    long self = ProcessHandle.current().pid();
    Thread.sleep((long) (warmup * 1000));
    long[] client0 = usage(self);
    long[] server0 = usage(serverPid);
    long count0 = exchanges.get();
    long start = System.nanoTime();
    Thread.sleep((long) (measure * 1000));
    long[] client1 = usage(self);
    long[] server1 = usage(serverPid);
    long count = exchanges.get() - count0;
    long elapsed = System.nanoTime() - start;
    stop.set(true);
    double clientCpu = (client1[0] - client0[0]) * MICROS_PER_TICK / count;
    double serverCpu = (server1[0] - server0[0]) * MICROS_PER_TICK / count;
    System.out.printf(
        "%s size=%d exchanges/s=%.0f cpu_us=%.2f client_us=%.2f server_us=%.2f"
            + " switches client=%.2f server=%.2f%n",
        kind,
        size,
        count / (elapsed / 1e9),
        clientCpu + serverCpu,
        clientCpu,
        serverCpu,
        (client1[1] - client0[1]) / (double) count,
        (server1[1] - server0[1]) / (double) count);
    System.exit(0);
  }

  private static void socketClient(int port, byte[] message, AtomicBoolean stop, AtomicLong count)
      throws IOException {
    Socket socket = new Socket("127.0.0.1", port);
    socket.setTcpNoDelay(true);
    DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
    DataOutputStream out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
    Thread exchanger =
        new Thread(
            () -> {
              try {
                while (!stop.get()) {
                  out.writeInt(message.length);
                  out.write(message);
                  out.flush();
                  in.readFully(new byte[in.readInt()]);
                  count.incrementAndGet();
                }
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            });
    exchanger.setDaemon(true);
    exchanger.start();
  }

  private static void nettyClient(int port, byte[] message, AtomicBoolean stop, AtomicLong count)
      throws InterruptedException {
    ByteBuf frame = Unpooled.buffer(4 + message.length).writeInt(message.length).writeBytes(message);
    Channel channel =
        new Bootstrap()
            .group(new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory()))
            .channel(EpollSocketChannel.class)
            .option(ChannelOption.TCP_NODELAY, true)
            .handler(
                framed(
                    () -> new ChannelInboundHandlerAdapter() {
                      @Override
                      public void channelRead(ChannelHandlerContext ctx, Object answer) {
                        ReferenceCountUtil.release(answer);
                        count.incrementAndGet();
                        if (!stop.get()) {
                          ctx.writeAndFlush(frame.retainedDuplicate());
                        }
                      }
                    }))
            .connect("127.0.0.1", port)
            .sync()
            .channel();
    channel.writeAndFlush(frame.retainedDuplicate());
  }

  private static void grpcClient(int port, byte[] message, AtomicBoolean stop, AtomicLong count) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().directExecutor().build();
    ClientCall<byte[], byte[]> call = channel.newCall(ECHO, CallOptions.DEFAULT);
    call.start(
        new ClientCall.Listener<>() {
          @Override
          public void onMessage(byte[] answer) {
            count.incrementAndGet();
            if (!stop.get()) {
              call.sendMessage(message);
              call.request(1);
            }
          }
        },
        new Metadata());
    call.request(1);
    call.sendMessage(message);
  }

  /** A process's CPU time in clock ticks and its threads' context switches, from /proc. */
  private static long[] usage(long pid) throws IOException {
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
    long switches = 0;
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/" + pid + "/task"))) {
      for (Path task : tasks) {
        for (String line : Files.readAllLines(task.resolve("status"))) {
          if (line.contains("ctxt_switches")) {
            switches += Long.parseLong(line.split("\\s+")[1]);
          }
        }
      }
    }
    return new long[] {ticks, switches};
  }
}
