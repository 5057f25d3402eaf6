package dev.weir.tls;

import dev.weir.core.config.ByteOrderMark;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Reader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
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

  /** The largest PEM file read: 4 MiB, twenty times a full public CA bundle. */
  static final long MAX_FILE_BYTES = 4L << 20;

  private Pem() {}

  /** Returns the certificates in {@code file}, in order; none is an error. */
  public static X509Certificate[] certificates(Path file) throws IOException {
    List<X509Certificate> certs = new ArrayList<>();
    JcaX509CertificateConverter converter = new JcaX509CertificateConverter();
    try {
      for (Object o : objects(file)) {
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

  /** Returns the private key in {@code file}; a key the JDK cannot use is an error naming it. */
  public static PrivateKey privateKey(Path file) throws IOException {
    JcaPEMKeyConverter converter = new JcaPEMKeyConverter();
    for (Object o : objects(file)) {
      PrivateKeyInfo info =
          o instanceof PEMKeyPair pair
              ? pair.getPrivateKeyInfo()
              : o instanceof PrivateKeyInfo i ? i : null;
      if (info != null) {
        try {
          return converter.getPrivateKey(info);
        } catch (IOException | RuntimeException e) {
          throw new IOException(
              file
                  + ": not a usable private key (an unencrypted RSA, EC, Ed25519 or Ed448 key in"
                  + " PEM is expected): "
                  + e.getMessage(),
              e);
        }
      }
    }
    throw new IOException(
        file + ": no unencrypted PEM private key (BEGIN PRIVATE KEY, RSA or EC) found");
  }

  /** Returns when {@code file} was last modified; a file that cannot be read is named. */
  public static FileTime modified(Path file) throws IOException {
    try {
      return Files.getLastModifiedTime(file);
    } catch (IOException e) {
      throw unreadable(file, e);
    }
  }

  // The PEM objects in file, in order; every failure to read or parse it names the file. Text
  // outside the blocks (a byte order mark, openssl's "subject=" lines) is skipped whatever its
  // encoding, as openssl and Go do; a file without blocks that holds such bytes is no PEM text.
  private static List<Object> objects(Path file) throws IOException {
    List<Object> objects = new ArrayList<>();
    boolean ascii = true;
    byte[] bytes = bounded(file);
    try {
      for (byte b : bytes) {
        ascii &= b >= 0;
      }
      // One character per byte, so that bytes outside the blocks are skipped whatever they are.
      int start = ByteOrderMark.length(bytes);
      try (Reader reader =
              new InputStreamReader(
                  new ByteArrayInputStream(bytes, start, bytes.length - start),
                  StandardCharsets.ISO_8859_1);
          PEMParser parser = new PEMParser(reader)) {
        for (Object o = parser.readObject(); o != null; o = parser.readObject()) {
          objects.add(o);
        }
      }
    } catch (IOException | RuntimeException e) {
      throw new IOException(file + ": not valid PEM: " + e.getMessage(), e);
    }
    if (objects.isEmpty() && !ascii) {
      throw new IOException(
          file + ": not PEM text (it holds bytes that are not ASCII and no BEGIN block; DER?)");
    }
    return objects;
  }

  // The bytes of file, refused naming its size when it is larger than a PEM file can sensibly be.
  private static byte[] bounded(Path file) throws IOException {
    long size;
    try {
      size = Files.size(file);
    } catch (NoSuchFileException | AccessDeniedException e) {
      throw unreadable(file, e);
    }
    if (size > MAX_FILE_BYTES) {
      throw new IOException(
          file + ": " + size + " bytes; allowed: at most " + MAX_FILE_BYTES + " for a PEM file");
    }
    try {
      return Files.readAllBytes(file);
    } catch (NoSuchFileException | AccessDeniedException e) {
      throw unreadable(file, e);
    }
  }

  private static IOException unreadable(Path file, IOException e) {
    if (e instanceof NoSuchFileException) {
      return new IOException(file + ": no such file", e);
    }
    if (e instanceof AccessDeniedException) {
      return new IOException(file + ": not readable (permission denied)", e);
    }
    return new IOException(file + ": " + e.getMessage(), e);
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
