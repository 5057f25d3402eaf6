package dev.weir.tls;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import org.bouncycastle.asn1.ASN1Integer;
import org.bouncycastle.asn1.DERNull;
import org.bouncycastle.asn1.pkcs.PKCSObjectIdentifiers;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.asn1.x509.AlgorithmIdentifier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Pem}'s errors name the file whatever part of reading it fails. */
class PemTest {

  @TempDir Path dir;

  @Test
  void privateKey_pkcs8RsaKeyWhoseKeyIsNoRsaKey_errorNamesTheFileAndWhatIsExpected()
      throws Exception {
    PrivateKeyInfo broken =
        new PrivateKeyInfo(
            new AlgorithmIdentifier(PKCSObjectIdentifiers.rsaEncryption, DERNull.INSTANCE),
            new ASN1Integer(7));
    Path file = dir.resolve("tls.key");
    Files.writeString(
        file,
        "-----BEGIN PRIVATE KEY-----\n"
            + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(broken.getEncoded())
            + "\n-----END PRIVATE KEY-----\n");

    assertThatThrownBy(() -> Pem.privateKey(file))
        .isInstanceOf(IOException.class)
        .hasMessageStartingWith(file + ": not a usable private key")
        .hasMessageContaining("RSA");
  }
}
