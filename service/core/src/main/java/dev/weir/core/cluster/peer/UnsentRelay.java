package dev.weir.core.cluster.peer;

import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;

/**
 * A relay ({@code weir_relay_to}) that the relaying node refused before sending anything on to its
 * target: the target is not a member, is the relaying node itself, or is down there too, or the
 * relaying node is not serving. Its answer carries the trailer {@link #TRAILER} so that the caller
 * knows it may send the same items through another peer without the target counting them twice.
 */
public final class UnsentRelay extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The trailer, value {@code "1"}, of a relay refused before anything was sent on. */
  public static final Metadata.Key<String> TRAILER =
      Metadata.Key.of("weir-relay-unsent", Metadata.ASCII_STRING_MARSHALLER);

  /** Creates the refusal, {@code message} saying why the relay was not sent on. */
  public UnsentRelay(String message) {
    super(message, null, false, false);
  }

  /** Returns the trailers of an answer refusing a relay before anything was sent on. */
  public static Metadata trailers() {
    Metadata trailers = new Metadata();
    trailers.put(TRAILER, "1");
    return trailers;
  }

  /**
   * Returns whether {@code error}'s cause chain holds a gRPC error whose trailers carry {@link
   * #TRAILER}: the relaying peer did not send the call on. An older peer sends no such trailer.
   */
  public static boolean unsent(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof StatusRuntimeException e
          && e.getTrailers() != null
          && "1".equals(e.getTrailers().get(TRAILER))) {
        return true;
      }
    }
    return false;
  }
}
