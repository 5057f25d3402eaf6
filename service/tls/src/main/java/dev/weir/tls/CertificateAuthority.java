package dev.weir.tls;

import java.math.BigInteger;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.bouncycastle.util.IPAddress;

/**
 * A throw-away certificate authority with an EC P-256 key that issues certificates usable for both
 * server and client TLS: what {@code WEIR_TLS_AUTO} uses, and what tests use to make certificates.
 */
public final class CertificateAuthority {

  /** A private key and its certificate chain. */
  public record Identity(PrivateKey key, X509Certificate[] chain) {}

  private static final SecureRandom RANDOM = new SecureRandom();

  private final KeyPair keys;
  private final X509Certificate certificate;

  private CertificateAuthority(KeyPair keys, X509Certificate certificate) {
    this.keys = keys;
    this.certificate = certificate;
  }

  /** Creates a CA named {@code CN=name}, valid from now for {@code validity}. */
  public static CertificateAuthority create(String name, Duration validity)
      throws GeneralSecurityException {
    KeyPair keys = newKeyPair();
    X500Name subject = new X500Name("CN=" + name);
    Instant now = Instant.now();
    X509v3CertificateBuilder builder =
        new JcaX509v3CertificateBuilder(
            subject, serial(), Date.from(now.minusSeconds(60)), Date.from(now.plus(validity)),
            subject, keys.getPublic());
    try {
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
      builder.addExtension(
          Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
    } catch (java.io.IOException e) {
      throw new GeneralSecurityException(e);
    }
    return new CertificateAuthority(keys, sign(builder, keys.getPrivate()));
  }

  /** Returns the CA's certificate, what peers and clients must trust. */
  public X509Certificate certificate() {
    return certificate;
  }

  /**
   * Returns the subject alternative name of {@code host}: an IP address (an IPv6 zone such as
   * {@code %lo} dropped, as certificates carry none), a URI when it opens with a scheme and
   * {@code :}, else a DNS name (also digits and dots that are no IPv4 address, such as {@code
   * 1.2.3}).
   */
  private static GeneralName alternativeName(String host) {
    int zone = host.indexOf('%');
    String address = zone >= 0 ? host.substring(0, zone) : host;
    if (IPAddress.isValidIPv4(address) || IPAddress.isValidIPv6(address)) {
      return new GeneralName(GeneralName.iPAddress, address);
    }
    if (host.matches("[A-Za-z][A-Za-z0-9+.-]*:.*")) {
      return new GeneralName(GeneralName.uniformResourceIdentifier, host);
    }
    return new GeneralName(GeneralName.dNSName, host);
  }

  /**
   * Issues a certificate for {@code CN=commonName} with {@code hosts} (DNS names, IP addresses, or
   * URIs such as SPIFFE IDs) as subject alternative names, for server and client authentication.
   */
  public Identity issue(String commonName, List<String> hosts, Duration validity)
      throws GeneralSecurityException {
    KeyPair leaf = newKeyPair();
    Instant now = Instant.now();
    X509v3CertificateBuilder builder =
        new JcaX509v3CertificateBuilder(
            certificate, serial(), Date.from(now.minusSeconds(60)), Date.from(now.plus(validity)),
            new X500Name("CN=" + commonName), leaf.getPublic());
    GeneralName[] names =
        hosts.stream().map(CertificateAuthority::alternativeName).toArray(GeneralName[]::new);
    try {
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
      builder.addExtension(
          Extension.extendedKeyUsage,
          false,
          new ExtendedKeyUsage(
              new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth}));
      if (names.length > 0) {
        builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names));
      }
    } catch (java.io.IOException e) {
      throw new GeneralSecurityException(e);
    }
    X509Certificate cert = sign(builder, keys.getPrivate());
    return new Identity(leaf.getPrivate(), new X509Certificate[] {cert, certificate});
  }

  private static KeyPair newKeyPair() throws GeneralSecurityException {
    KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
    generator.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
    return generator.generateKeyPair();
  }

  private static BigInteger serial() {
    return new BigInteger(64, RANDOM).abs().add(BigInteger.ONE);
  }

  private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey signer)
      throws GeneralSecurityException {
    try {
      return new JcaX509CertificateConverter()
          .getCertificate(
              builder.build(new JcaContentSignerBuilder("SHA256withECDSA").build(signer)));
    } catch (OperatorCreationException e) {
      throw new GeneralSecurityException(e);
    }
  }
}
