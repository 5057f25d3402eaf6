package dev.weir.server;

/**
 * Prints whether each Netty hands back a recycled object on one of its own threads (as on an event
 * loop): {@code java RecyclerProbe true} loads {@link Main} first, as {@code java -jar weir.jar}
 * does.
 */
final class RecyclerProbe {

  private RecyclerProbe() {}

  public static void main(String[] args) throws InterruptedException {
    if (Boolean.parseBoolean(args[0])) {
      try {
        Class.forName(Main.class.getName(), true, RecyclerProbe.class.getClassLoader());
      } catch (ClassNotFoundException e) {
        throw new IllegalStateException(e);
      }
    }
    String[] shaded = new String[1];
    String[] unshaded = new String[1];
    Thread a =
        new io.grpc.netty.shaded.io.netty.util.concurrent.FastThreadLocalThread(
            () -> shaded[0] = shaded());
    Thread b = new io.netty.util.concurrent.FastThreadLocalThread(() -> unshaded[0] = unshaded());
    a.start();
    b.start();
    a.join();
    b.join();
    System.out.println("shaded=" + shaded[0] + " unshaded=" + unshaded[0]);
  }

  private static String shaded() {
    io.grpc.netty.shaded.io.netty.util.Recycler<Object[]> recycler =
        new io.grpc.netty.shaded.io.netty.util.Recycler<>() {
          @Override
          protected Object[] newObject(Handle<Object[]> handle) {
            return new Object[] {handle};
          }
        };
    Object[] first = recycler.get();
    @SuppressWarnings("unchecked")
    io.grpc.netty.shaded.io.netty.util.Recycler.Handle<Object[]> handle =
        (io.grpc.netty.shaded.io.netty.util.Recycler.Handle<Object[]>) first[0];
    handle.recycle(first);
    return recycler.get() == first ? "recycled" : "new";
  }

  private static String unshaded() {
    io.netty.util.Recycler<Object[]> recycler =
        new io.netty.util.Recycler<>() {
          @Override
          protected Object[] newObject(Handle<Object[]> handle) {
            return new Object[] {handle};
          }
        };
    Object[] first = recycler.get();
    @SuppressWarnings("unchecked")
    io.netty.util.Recycler.Handle<Object[]> handle =
        (io.netty.util.Recycler.Handle<Object[]>) first[0];
    handle.recycle(first);
    return recycler.get() == first ? "recycled" : "new";
  }
}
