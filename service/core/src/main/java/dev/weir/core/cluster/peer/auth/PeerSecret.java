package dev.weir.core.cluster.peer.auth;

import io.grpc.Metadata;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * A secret every member of a cluster shares and sends with each peer call, under the metadata key
 * {@value #HEADER_NAME}: the proof of membership of a cluster without TLS. It is 16 to 4096
 * printable ASCII characters without surrounding spaces; {@link #toString()} never shows it.
 *
 * <p>Without TLS it crosses the network in clear text: it keeps out whoever can connect to the peer
 * port, not whoever can read the traffic between members.
 */
public final class PeerSecret {

  /** The metadata key peers send the secret under. */
  public static final String HEADER_NAME = "weir-peer-secret";

  /** The metadata key peers send the secret under. */
  public static final Metadata.Key<String> HEADER =
      Metadata.Key.of(HEADER_NAME, Metadata.ASCII_STRING_MARSHALLER);

  /** The fewest characters of a secret. */
  public static final int MIN_LENGTH = 16;

  /** The most characters of a secret. */
  public static final int MAX_LENGTH = 4096;

  private final String value;
  private final byte[] digest;

  private PeerSecret(String value) {
    this.value = value;
    this.digest = sha256(value);
  }

  /**
   * Returns the secret {@code value}.
   *
   * @throws IllegalArgumentException saying what is wrong (never echoing the value)
   */
  public static PeerSecret of(String value) {
    if (value.length() < MIN_LENGTH || value.length() > MAX_LENGTH) {
      throw new IllegalArgumentException(
          "the peer secret must be "
              + MIN_LENGTH
              + " to "
              + MAX_LENGTH
              + " characters long, got "
              + value.length());
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x21 || c > 0x7e) {
        throw new IllegalArgumentException(
            "the peer secret must be printable ASCII without spaces; character "
                + (i + 1)
                + " is not");
      }
    }
    return new PeerSecret(value);
  }

  /** Returns the secret as sent in metadata. */
  String value() {
    return value;
  }

  /**
   * Returns whether {@code candidate} (possibly null) is this secret, in time independent of where
   * they differ and of their lengths (both are hashed first).
   */
  public boolean matches(String candidate) {
    return candidate != null && MessageDigest.isEqual(digest, sha256(candidate));
  }

  private static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  @Override
  public String toString() {
    return "PeerSecret[redacted]";
  }
}
