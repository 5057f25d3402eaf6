package dev.weir.tls;

import java.io.IOException;
import java.net.Socket;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.GeneralSecurityException;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.Arrays;
import java.util.Objects;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * A trust manager that trusts the CA certificates currently in a PEM file, plus a fixed set of
 * extra CAs (the generated CA of {@code WEIR_TLS_AUTO}). {@link #reloadIfChanged()}, called on a
 * schedule, re-reads the file when its modification time changed and swaps the trust atomically;
 * new handshakes then verify against the new CAs, established connections are not re-checked. A
 * file that cannot be read or holds no certificate keeps the previous trust in use and the error
 * is reported to the caller.
 */
public final class ReloadingTrustManager extends X509ExtendedTrustManager {

  private final Path caFile;
  private final X509Certificate[] extra;
  private volatile Trust trust;
  private volatile FileTime caTime;

  /**
   * The trust in use and the number of times the CA file was taken up to make it, published
   * together so that a reader seeing a generation also sees the CAs it counts.
   */
  private record Trust(X509ExtendedTrustManager delegate, long generation) {}

  private ReloadingTrustManager(Path caFile, X509Certificate[] extra) {
    this.caFile = Objects.requireNonNull(caFile, "caFile");
    this.extra = extra.clone();
  }

  /**
   * Loads {@code caFile} and trusts its certificates and {@code extra}; fails if the file cannot be
   * used.
   */
  public static ReloadingTrustManager load(Path caFile, X509Certificate... extra)
      throws IOException, GeneralSecurityException {
    ReloadingTrustManager manager = new ReloadingTrustManager(caFile, extra);
    manager.reload();
    return manager;
  }

  /**
   * Re-reads the CA file if it changed since the last load and returns whether it did.
   *
   * @throws IOException if the changed file cannot be read or holds no certificate (the previous
   *     trust stays in use)
   */
  public boolean reloadIfChanged() throws IOException, GeneralSecurityException {
    if (Pem.modified(caFile).equals(caTime)) {
      return false;
    }
    reload();
    return true;
  }

  private synchronized void reload() throws IOException, GeneralSecurityException {
    FileTime newTime = Pem.modified(caFile);
    X509Certificate[] cas = Pem.certificates(caFile);
    X509Certificate[] all = Arrays.copyOf(cas, cas.length + extra.length);
    System.arraycopy(extra, 0, all, cas.length, extra.length);
    X509ExtendedTrustManager next = KeyManagers.trustManager(all);
    trust = new Trust(next, trust == null ? 1 : trust.generation() + 1);
    caTime = newTime;
  }

  /**
   * Returns the number of times the CA file was taken up, the first load included; it changes
   * exactly when the trusted CAs may have.
   */
  public long generation() {
    return trust.generation();
  }

  private X509ExtendedTrustManager delegate() {
    return trust.delegate();
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType)
      throws CertificateException {
    delegate().checkClientTrusted(chain, authType);
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType)
      throws CertificateException {
    delegate().checkServerTrusted(chain, authType);
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket)
      throws CertificateException {
    delegate().checkClientTrusted(chain, authType, socket);
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket)
      throws CertificateException {
    delegate().checkServerTrusted(chain, authType, socket);
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
      throws CertificateException {
    delegate().checkClientTrusted(chain, authType, engine);
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
      throws CertificateException {
    delegate().checkServerTrusted(chain, authType, engine);
  }

  @Override
  public X509Certificate[] getAcceptedIssuers() {
    return delegate().getAcceptedIssuers();
  }
}
