package dev.weir.core.metrics;

import java.util.Locale;

/** Why a request was refused before any bucket was touched. */
public enum RefusalReason {
  /** A gRPC message larger than {@code WEIR_GRPC_MAX_MESSAGE_SIZE}. */
  GRPC_MESSAGE_TOO_LARGE,
  /** An HTTP body larger than {@code WEIR_HTTP_MAX_BODY_SIZE}. */
  HTTP_BODY_TOO_LARGE,
  /** More items in one call than one call may carry. */
  TOO_MANY_ITEMS,
  /** A name, key or value longer than allowed. */
  FIELD_TOO_LONG,
  /** More descriptor entries than one descriptor may carry. */
  TOO_MANY_ENTRIES,
  /**
   * A new RLQS bucket of a stream holding as many as allowed ({@code WEIR_RLQS_MAX_BUCKETS}), or of
   * a node whose streams hold as many bytes of bucket ids as allowed ({@code
   * WEIR_RLQS_MAX_NODE_BUCKET_BYTES}).
   */
  TOO_MANY_BUCKETS,
  /** An Envoy limit override without a valid unit, or on a descriptor without entries. */
  INVALID_OVERRIDE,
  /**
   * An HTTP request that found as many requests in flight as allowed ({@code
   * WEIR_HTTP_MAX_IN_FLIGHT}).
   */
  HTTP_SATURATED,
  /**
   * A call to the peer listener without valid credentials: no or a wrong shared secret ({@code
   * WEIR_PEER_SECRET}), or no TLS client certificate.
   */
  PEER_UNAUTHENTICATED,
  /**
   * A call to the peer listener with a TLS client certificate the CA signed but whose identities
   * are not allowed ({@code WEIR_PEER_ALLOWED_IDENTITIES}).
   */
  PEER_NOT_ALLOWED,
  /**
   * An item (or a whole call) of the peer protocol outside what a peer can legitimately send: an
   * empty or over-long key, a timestamp far from this node's clock, an unknown algorithm, a bucket
   * state the engine cannot produce, a malformed membership notice.
   */
  PEER_INVALID_INPUT,
  /** An HTTP connection beyond the most open at once ({@code WEIR_HTTP_MAX_CONNECTIONS}). */
  HTTP_TOO_MANY_CONNECTIONS,
  /**
   * An HTTP request whose head or body did not arrive in time ({@code WEIR_HTTP_HEADER_TIMEOUT},
   * {@code WEIR_HTTP_BODY_TIMEOUT}), or whose answer was not written in time because the client did
   * not read it ({@code WEIR_HTTP_WRITE_TIMEOUT}).
   */
  HTTP_TIMEOUT,
  /** An HTTP request the decoder could not read: bad framing, a bad chunk size, a head too long. */
  HTTP_MALFORMED;

  /** Returns the label value, e.g. {@code field_too_long}. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
