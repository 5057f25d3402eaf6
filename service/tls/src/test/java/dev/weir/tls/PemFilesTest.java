package dev.weir.tls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class PemFilesTest {
  private static final EnvVar CERT = EnvVar.of("X_CERT");
  private static final EnvVar KEY = EnvVar.of("X_KEY", "Y_KEY");
  private static final EnvVar CA = EnvVar.of("X_CA");

  @Test
  void read_allThree() {
    PemFiles files =
        PemFiles.read(
            new EnvReader(Map.of("X_CERT", "c.pem", "Y_KEY", "k.pem", "X_CA", "ca.pem")),
            CERT,
            KEY,
            CA);

    assertThat(files)
        .isEqualTo(
            new PemFiles(
                Optional.of(Path.of("c.pem")),
                Optional.of(Path.of("k.pem")),
                Optional.of(Path.of("ca.pem"))));
  }

  @Test
  void read_noneSet_empty() {
    assertThat(PemFiles.read(new EnvReader(Map.of()), CERT, KEY, CA))
        .isEqualTo(new PemFiles(Optional.empty(), Optional.empty(), Optional.empty()));
  }

  @Test
  void read_keyWithoutCertificate_namesBothAndTheOneSet() {
    EnvReader reader = new EnvReader(Map.of("X_KEY", "k.pem", "X_CA", "ca.pem"));

    assertThatThrownBy(() -> PemFiles.read(reader, CERT, KEY, CA))
        .isInstanceOf(ConfigException.class)
        .hasMessage("X_CERT and X_KEY must be set together: only X_KEY is set");
  }
}
