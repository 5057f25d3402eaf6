package dev.weir.tls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReloadingKeyManagerTest {

  private static final Duration DAY = Duration.ofDays(1);
  private static final List<String> HOSTS = List.of("localhost");

  @TempDir Path dir;
  private CertificateAuthority ca;
  private Path certFile;
  private Path keyFile;

  @BeforeEach
  void createCa() throws Exception {
    ca = CertificateAuthority.create("test-ca", DAY);
    certFile = dir.resolve("cert.pem");
    keyFile = dir.resolve("key.pem");
  }

  private CertificateAuthority.Identity write(String name, int secondsLater) throws Exception {
    CertificateAuthority.Identity identity = ca.issue(name, HOSTS, DAY);
    Files.writeString(certFile, Pem.encode((Object[]) identity.chain()));
    Files.writeString(keyFile, Pem.encode(identity.key()));
    FileTime time = FileTime.from(Instant.parse("2026-01-01T00:00:00Z").plusSeconds(secondsLater));
    Files.setLastModifiedTime(certFile, time);
    Files.setLastModifiedTime(keyFile, time);
    return identity;
  }

  @Test
  void reloadBetweenAliasAndKeyLookup_aliasStillNamesTheMatchingPairItWasChosenFrom()
      throws Exception {
    CertificateAuthority.Identity old = write("old", 0);
    ReloadingKeyManager keys = ReloadingKeyManager.load(certFile, keyFile);
    String alias = keys.chooseServerAlias("EC", null, null);

    CertificateAuthority.Identity next = write("next", 10);
    assertThat(keys.reloadIfChanged()).isTrue();

    assertThat(keys.getPrivateKey(alias)).isEqualTo(old.key());
    assertThat(keys.getCertificateChain(alias)).containsExactly(old.chain());
    assertThatCode(
            () ->
                KeyMatch.check(
                    keys.getPrivateKey(alias), keys.getCertificateChain(alias)[0], keyFile,
                    certFile))
        .doesNotThrowAnyException();
    String nextAlias = keys.chooseServerAlias("EC", null, null);
    assertThat(nextAlias).isNotEqualTo(alias);
    assertThat(keys.getPrivateKey(nextAlias)).isEqualTo(next.key());
    assertThat(keys.getCertificateChain(nextAlias)).containsExactly(next.chain());
    assertThat(keys.currentChain()).containsExactly(next.chain());
  }

  @Test
  void twoReloadsAfterTheAliasWasChosen_aliasNoLongerResolves() throws Exception {
    write("first", 0);
    ReloadingKeyManager keys = ReloadingKeyManager.load(certFile, keyFile);
    String alias = keys.chooseEngineServerAlias("EC", null, null);

    write("second", 10);
    assertThat(keys.reloadIfChanged()).isTrue();
    write("third", 20);
    assertThat(keys.reloadIfChanged()).isTrue();

    assertThat(keys.getPrivateKey(alias)).isNull();
    assertThat(keys.getCertificateChain(alias)).isNull();
    assertThat(keys.getPrivateKey("weir")).isNull();
    assertThat(keys.getPrivateKey(null)).isNull();
  }
}
