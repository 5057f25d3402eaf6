package dev.weir.envoy.config;

import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Objects;

/** Test resources of this package. */
final class Fixtures {
  private Fixtures() {}

  /** Returns the path of {@code config/<name>} in the test resources. */
  static Path path(String name) {
    try {
      return Path.of(
          Objects.requireNonNull(Fixtures.class.getResource("/config/" + name), name).toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }
}
