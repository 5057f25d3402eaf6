package dev.weir.tls;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
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

  @Test
  void certificatesAndKey_utf8TextAndByteOrderMarkOutsideTheBlocks_readAsOpensslAndGoDo()
      throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("ca", Duration.ofDays(1));
    CertificateAuthority.Identity node = ca.issue("node", List.of("localhost"), Duration.ofDays(1));
    byte[] bom = {(byte) 0xef, (byte) 0xbb, (byte) 0xbf};
    Path cert = dir.resolve("tls.crt");
    Files.write(
        cert,
        concat(
            bom,
            ("subject=CN = Z\u00fcrich\n" + Pem.encode(node.chain()[0]) + "\u00e9t\u00e9\n")
                .getBytes(StandardCharsets.UTF_8)));
    Path key = dir.resolve("tls.key");
    Files.write(key, concat(bom, Pem.encode(node.key()).getBytes(StandardCharsets.US_ASCII)));

    assertThat(Pem.certificates(cert)).containsExactly(node.chain()[0]);
    assertThat(Pem.privateKey(key)).isEqualTo(node.key());
  }

  @Test
  void certificates_binaryDerFile_errorSaysItIsNotPemText() throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("ca", Duration.ofDays(1));
    Path file = dir.resolve("ca.der");
    Files.write(file, ca.certificate().getEncoded());

    assertThatThrownBy(() -> Pem.certificates(file))
        .isInstanceOf(IOException.class)
        .hasMessageStartingWith(file + ": not PEM text");
  }

  @Test
  void certificates_fileLargerThanAPemFileCanBe_refusedNamingItsSizeBeforeReadingIt()
      throws Exception {
    Path file = dir.resolve("huge.pem");
    try (RandomAccessFile sparse = new RandomAccessFile(file.toFile(), "rw")) {
      sparse.setLength(Pem.MAX_FILE_BYTES + 1);
    }

    assertThatThrownBy(() -> Pem.certificates(file))
        .isInstanceOf(IOException.class)
        .hasMessage(file + ": 4194305 bytes; allowed: at most 4194304 for a PEM file");
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = new byte[a.length + b.length];
    System.arraycopy(a, 0, out, 0, a.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
