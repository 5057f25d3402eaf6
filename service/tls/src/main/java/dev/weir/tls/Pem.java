package dev.weir.tls;

import java.io.IOException;
import java.io.Reader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.openssl.PEMKeyPair;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;

/**
 * Reads and writes PEM files: certificate chains, and private keys in PKCS#8 ({@code BEGIN PRIVATE
 * KEY}) or the older PKCS#1/SEC1 forms ({@code BEGIN RSA PRIVATE KEY}, {@code BEGIN EC PRIVATE
 * KEY}), through BouncyCastle's parser. Errors name the file and what was expected.
 */
public final class Pem {

  private Pem() {}

  /** Returns the certificates in {@code file}, in order; none is an error. */
  public static X509Certificate[] certificates(Path file) throws IOException {
    List<X509Certificate> certs = new ArrayList<>();
    JcaX509CertificateConverter converter = new JcaX509CertificateConverter();
    try (Reader reader = Files.newBufferedReader(file, StandardCharsets.US_ASCII);
        PEMParser parser = new PEMParser(reader)) {
      for (Object o = parser.readObject(); o != null; o = parser.readObject()) {
        if (o instanceof X509CertificateHolder holder) {
          certs.add(converter.getCertificate(holder));
        }
      }
    } catch (CertificateException e) {
      throw new IOException(file + ": not a valid certificate: " + e.getMessage(), e);
    }
    if (certs.isEmpty()) {
      throw new IOException(file + ": no PEM certificate (BEGIN CERTIFICATE) found");
    }
    return certs.toArray(X509Certificate[]::new);
  }

  /** Returns the private key in {@code file}. */
  public static PrivateKey privateKey(Path file) throws IOException {
    JcaPEMKeyConverter converter = new JcaPEMKeyConverter();
    try (Reader reader = Files.newBufferedReader(file, StandardCharsets.US_ASCII);
        PEMParser parser = new PEMParser(reader)) {
      for (Object o = parser.readObject(); o != null; o = parser.readObject()) {
        if (o instanceof PrivateKeyInfo info) {
          return converter.getPrivateKey(info);
        }
        if (o instanceof PEMKeyPair pair) {
          return converter.getPrivateKey(pair.getPrivateKeyInfo());
        }
      }
    }
    throw new IOException(
        file + ": no unencrypted PEM private key (BEGIN PRIVATE KEY, RSA or EC) found");
  }

  /** Returns {@code objects} (certificates, keys) as PEM text; private keys as PKCS#8. */
  public static String encode(Object... objects) throws IOException {
    StringWriter out = new StringWriter();
    try (JcaPEMWriter writer = new JcaPEMWriter(out)) {
      for (Object o : objects) {
        if (o instanceof PrivateKey key) {
          writer.writeObject(new JcaPKCS8Generator(key, null));
        } else {
          writer.writeObject(o);
        }
      }
    }
    return out.toString();
  }
}
