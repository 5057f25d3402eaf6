package dev.weir.core.cluster.peer;

import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;

/**
 * A relay ({@code weir_relay_to}) that the relaying node refused before sending anything on to its
 * target: the target is not a member, is the relaying node itself, or is down there too, or the
 * relaying node is not serving. Its answer carries the trailer {@link #TRAILER} so that the caller
 * knows it may send the same items through another peer without the target counting them twice,
 * and, when the target announced its leave to the relaying node longer ago than the relaying
 * node's grace, also the trailer {@link #TARGET_LEFT} so that the caller takes the target as left.
 */
public final class UnsentRelay extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The trailer, value {@code "1"}, of a relay refused before anything was sent on. */
  public static final Metadata.Key<String> TRAILER =
      Metadata.Key.of("weir-relay-unsent", Metadata.ASCII_STRING_MARSHALLER);

  /**
   * The trailer, value {@code "1"}, of a relay refused because its target announced its leave to
   * the relaying node longer ago than the grace the relaying node gives a leaver.
   */
  public static final Metadata.Key<String> TARGET_LEFT =
      Metadata.Key.of("weir-relay-target-left", Metadata.ASCII_STRING_MARSHALLER);

  private final boolean targetLeft;

  /** Creates the refusal, {@code message} saying why the relay was not sent on. */
  public UnsentRelay(String message) {
    this(message, false);
  }

  /**
   * Creates the refusal, {@code message} saying why the relay was not sent on; {@code targetLeft}
   * tells whether it was refused because its target announced its leave (trailer {@link
   * #TARGET_LEFT}).
   */
  public UnsentRelay(String message, boolean targetLeft) {
    super(message, null, false, false);
    this.targetLeft = targetLeft;
  }

  /** Returns the trailers of an answer refusing a relay before anything was sent on. */
  public static Metadata trailers() {
    Metadata trailers = new Metadata();
    trailers.put(TRAILER, "1");
    return trailers;
  }

  /**
   * Returns the trailers of the answer carrying this refusal: {@link #TRAILER}, and {@link
   * #TARGET_LEFT} when the target announced its leave.
   */
  public Metadata answerTrailers() {
    Metadata trailers = trailers();
    if (targetLeft) {
      trailers.put(TARGET_LEFT, "1");
    }
    return trailers;
  }

  /**
   * Returns whether {@code error}'s cause chain holds a gRPC error whose trailers carry {@link
   * #TARGET_LEFT}: the relaying peer refused the relay because its target announced its leave
   * there longer ago than its grace. An older peer sends no such trailer.
   */
  public static boolean targetLeft(Throwable error) {
    return carries(error, TARGET_LEFT);
  }

  /**
   * Returns whether {@code error}'s cause chain holds a gRPC error whose trailers carry {@link
   * #TRAILER}: the relaying peer did not send the call on. An older peer sends no such trailer.
   */
  public static boolean unsent(Throwable error) {
    return carries(error, TRAILER);
  }

  private static boolean carries(Throwable error, Metadata.Key<String> trailer) {
    for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof StatusRuntimeException e
          && e.getTrailers() != null
          && "1".equals(e.getTrailers().get(trailer))) {
        return true;
      }
    }
    return false;
  }
}
