package dev.weir.tls;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.InvalidKeyException;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.SignatureException;
import java.security.cert.X509Certificate;

/**
 * The check that a private key belongs to a certificate: a message signed with the key must verify
 * with the certificate's public key. The JDK's key managers do not check this, so a certificate
 * file rewritten before its key file would otherwise be served with the old key and fail every
 * handshake.
 */
final class KeyMatch {

  private static final byte[] MESSAGE = "weir key match".getBytes(StandardCharsets.US_ASCII);

  private KeyMatch() {}

  /**
   * Throws unless {@code key}, read from {@code keyFile}, belongs to {@code cert}, read from {@code
   * certFile}; keys of an algorithm other than RSA, EC, Ed25519 and Ed448 are not checked.
   */
  static void check(PrivateKey key, X509Certificate cert, Path keyFile, Path certFile)
      throws GeneralSecurityException {
    String algorithm =
        switch (key.getAlgorithm()) {
          case "RSA" -> "SHA256withRSA";
          case "EC" -> "SHA256withECDSA";
          case "Ed25519", "Ed448", "EdDSA" -> key.getAlgorithm();
          default -> null;
        };
    if (algorithm != null && !signs(algorithm, key, cert)) {
      throw new GeneralSecurityException(
          keyFile
              + " does not hold the private key of the first certificate in "
              + certFile
              + " ("
              + cert.getSubjectX500Principal().getName()
              + "): write the key and the certificate as a pair");
    }
  }

  private static boolean signs(String algorithm, PrivateKey key, X509Certificate cert)
      throws GeneralSecurityException {
    try {
      Signature signer = Signature.getInstance(algorithm);
      signer.initSign(key);
      signer.update(MESSAGE);
      byte[] signature = signer.sign();
      Signature verifier = Signature.getInstance(algorithm);
      verifier.initVerify(cert.getPublicKey());
      verifier.update(MESSAGE);
      return verifier.verify(signature);
    } catch (InvalidKeyException | SignatureException e) {
      return false;
    }
  }
}
