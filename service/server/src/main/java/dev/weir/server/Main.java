package dev.weir.server;

/** The entry point of {@code weir.jar}. */
public final class Main {
  private Main() {}

  /** Starts a node. */
  public static void main(String[] args) {
    throw new UnsupportedOperationException("server not wired yet");
  }
}
