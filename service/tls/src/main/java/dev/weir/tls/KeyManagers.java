package dev.weir.tls;

import java.io.IOException;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;

/** Builds the JDK's key and trust managers from keys and certificates held in memory. */
final class KeyManagers {

  /** The alias of the one key entry in a key manager of {@link #keyManager}. */
  static final String ALIAS = "weir";

  private static final char[] NO_PASSWORD = new char[0];

  private KeyManagers() {}

  /** Returns a key manager presenting {@code chain} with {@code key}. */
  static X509ExtendedKeyManager keyManager(PrivateKey key, X509Certificate[] chain)
      throws GeneralSecurityException, IOException {
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    store.setKeyEntry(ALIAS, key, NO_PASSWORD, chain);
    KeyManagerFactory factory =
        KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    factory.init(store, NO_PASSWORD);
    for (KeyManager manager : factory.getKeyManagers()) {
      if (manager instanceof X509ExtendedKeyManager x509) {
        return x509;
      }
    }
    throw new GeneralSecurityException("no X509 key manager available");
  }

  /** Returns a trust manager trusting {@code cas}, or the JDK's defaults when null. */
  static X509ExtendedTrustManager trustManager(X509Certificate[] cas)
      throws GeneralSecurityException, IOException {
    KeyStore store = null;
    if (cas != null) {
      store = KeyStore.getInstance("PKCS12");
      store.load(null, null);
      for (int i = 0; i < cas.length; i++) {
        store.setCertificateEntry("ca-" + i, cas[i]);
      }
    }
    TrustManagerFactory factory =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    factory.init(store);
    for (TrustManager manager : factory.getTrustManagers()) {
      if (manager instanceof X509ExtendedTrustManager x509) {
        return x509;
      }
    }
    throw new GeneralSecurityException("no X509 trust manager available");
  }
}
