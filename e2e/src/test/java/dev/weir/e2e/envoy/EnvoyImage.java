package dev.weir.e2e.envoy;

/** The Envoy release the shipped configuration is written for and tested against. */
public final class EnvoyImage {
  /** The pinned image; {@code envoy-config/docker-compose.yaml} must name the same one. */
  public static final String NAME = "envoyproxy/envoy:v1.34.12";

  private EnvoyImage() {}
}
