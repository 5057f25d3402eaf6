package dev.weir.e2e.docs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class ShellSandboxTest {

  @Test
  void run_checkoutUnderTmp_scriptFindsItByItsAbsolutePathAndTmpIsStillPrivate() throws Exception {
    Path checkout = Files.createTempDirectory(Path.of("/tmp"), "weir-checkout");
    Path outside = Files.createTempFile(Path.of("/tmp"), "weir-outside", ".txt");
    Files.writeString(checkout.resolve("marker"), "here");
    try {
      ShellSandbox sandbox = ShellSandbox.at(checkout);
      assumeTrue(sandbox.isolated(), "no network and mount namespace (unshare) on this machine");

      ShellSandbox.Result result =
          sandbox.run(
              "cat " + checkout.resolve("marker") + " && test ! -e " + outside,
              Duration.ofSeconds(30));

      assertThat(result.status()).as(result.stderr()).isZero();
      assertThat(result.stdout()).isEqualTo("here");
    } finally {
      Files.deleteIfExists(outside);
      Files.deleteIfExists(checkout.resolve("marker"));
      Files.deleteIfExists(checkout);
    }
  }
}
