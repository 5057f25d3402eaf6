package dev.weir.core.grpc;

/**
 * The bound on HTTP/2 streams a client may reset on one connection of a gRPC port before the
 * connection is closed ({@code GOAWAY ENHANCE_YOUR_CALM}): a bound on "rapid reset"
 * (CVE-2023-44487, a client opening and cancelling streams in a loop, which a bound on open calls
 * does not count). A proxy or peer whose calls all time out during a pause resets far fewer.
 */
public final class StreamResets {

  /** The most streams a connection may reset within {@link #WINDOW_SECONDS}. */
  public static final int MAX_PER_WINDOW = 10_000;

  /** The window {@link #MAX_PER_WINDOW} is counted over, in seconds. */
  public static final int WINDOW_SECONDS = 10;

  private StreamResets() {}
}
