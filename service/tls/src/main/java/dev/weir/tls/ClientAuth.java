package dev.weir.tls;

/** Whether a TLS listener asks connecting clients for a certificate. */
public enum ClientAuth {
  /** No client certificate is asked for. */
  NONE,
  /** A client certificate is asked for and verified when given, but not required. */
  REQUEST,
  /** Every client must present a certificate signed by the configured CA (mutual TLS). */
  REQUIRE_AND_VERIFY
}
