package dev.weir.tls;

import java.io.IOException;
import java.net.Socket;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.GeneralSecurityException;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.Objects;
import java.util.function.Consumer;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;

/**
 * A key manager that presents the certificate and key currently in two PEM files. {@link
 * #reloadIfChanged()}, called on a schedule, re-reads them when either file's modification time
 * changed; new handshakes then use the new identity, established connections keep theirs. A file
 * that cannot be read, or a key that is not the first certificate's (one file rewritten, the other
 * not yet), keeps the previous identity in use and the error is reported to the caller.
 *
 * <p>Each load is a generation, and the aliases this manager chooses name it ({@code weir-1},
 * {@code weir-2}, ...): the key and chain of an alias are those of its generation, so a handshake
 * that chose an alias just before a reload still gets a matching key and chain. The current and
 * the previous generation resolve; older aliases resolve to null.
 */
public final class ReloadingKeyManager extends X509ExtendedKeyManager {

  private final Path certFile;
  private final Path keyFile;
  private volatile Generations generations;
  private volatile FileTime certTime;
  private volatile FileTime keyTime;
  private volatile Consumer<X509Certificate> check = certificate -> {};

  private ReloadingKeyManager(Path certFile, Path keyFile) {
    this.certFile = Objects.requireNonNull(certFile, "certFile");
    this.keyFile = Objects.requireNonNull(keyFile, "keyFile");
  }

  /** Loads {@code certFile} and {@code keyFile}; fails if they cannot be used. */
  public static ReloadingKeyManager load(Path certFile, Path keyFile)
      throws IOException, GeneralSecurityException {
    ReloadingKeyManager manager = new ReloadingKeyManager(certFile, keyFile);
    manager.reload();
    return manager;
  }

  /**
   * Makes every later reload pass the new first certificate to {@code check} before taking it up;
   * when {@code check} throws {@link IllegalArgumentException}, the reload fails naming the
   * certificate file and the previous identity stays in use.
   */
  public void checkReloads(Consumer<X509Certificate> check) {
    this.check = Objects.requireNonNull(check, "check");
  }

  /**
   * Re-reads the files if either changed since the last load and returns whether it did.
   *
   * @throws IOException if a changed file cannot be read (the previous identity stays in use)
   */
  public boolean reloadIfChanged() throws IOException, GeneralSecurityException {
    if (Pem.modified(certFile).equals(certTime)
        && Pem.modified(keyFile).equals(keyTime)) {
      return false;
    }
    reload();
    return true;
  }

  private synchronized void reload() throws IOException, GeneralSecurityException {
    FileTime newCertTime = Pem.modified(certFile);
    FileTime newKeyTime = Pem.modified(keyFile);
    X509Certificate[] chain = Pem.certificates(certFile);
    PrivateKey key = Pem.privateKey(keyFile);
    KeyMatch.check(key, chain[0], keyFile, certFile);
    Generations before = generations;
    if (before != null) {
      try {
        check.accept(chain[0]);
      } catch (IllegalArgumentException e) {
        throw new GeneralSecurityException(
            certFile + " not taken up, the previous certificate stays in use: " + e.getMessage(), e);
      }
    }
    X509ExtendedKeyManager manager = KeyManagers.keyManager(key, chain);
    generations =
        before == null
            ? new Generations(new Generation(1, manager, key, chain), null)
            : new Generations(
                new Generation(before.current().number() + 1, manager, key, chain),
                before.current());
    certTime = newCertTime;
    keyTime = newKeyTime;
  }

  /**
   * A loaded certificate chain and key, the JDK key manager that chooses between them and the
   * requested key types, and (as {@link #alias()}) the name this manager gives them.
   */
  private record Generation(
      long number, X509ExtendedKeyManager manager, PrivateKey key, X509Certificate[] chain) {

    String alias() {
      return "weir-" + number;
    }

    /** Returns this generation's alias when {@code chosen}, the delegate's choice, is one. */
    String alias(String chosen) {
      return chosen == null ? null : alias();
    }

    String[] aliases(String[] found) {
      return found == null || found.length == 0 ? found : new String[] {alias()};
    }
  }

  /** The generation in use and the one before it, swapped together. */
  private record Generations(Generation current, Generation previous) {

    Generation named(String alias) {
      if (alias == null) {
        return null;
      }
      if (alias.equals(current.alias())) {
        return current;
      }
      return previous != null && alias.equals(previous.alias()) ? previous : null;
    }
  }

  /** Returns the certificate chain presented now. */
  public X509Certificate[] currentChain() {
    return generations.current().chain().clone();
  }

  @Override
  public String[] getClientAliases(String keyType, Principal[] issuers) {
    Generation current = generations.current();
    return current.aliases(current.manager().getClientAliases(keyType, issuers));
  }

  @Override
  public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
    Generation current = generations.current();
    return current.alias(current.manager().chooseClientAlias(keyType, issuers, socket));
  }

  @Override
  public String[] getServerAliases(String keyType, Principal[] issuers) {
    Generation current = generations.current();
    return current.aliases(current.manager().getServerAliases(keyType, issuers));
  }

  @Override
  public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
    Generation current = generations.current();
    return current.alias(current.manager().chooseServerAlias(keyType, issuers, socket));
  }

  @Override
  public X509Certificate[] getCertificateChain(String alias) {
    Generation generation = generations.named(alias);
    return generation == null ? null : generation.chain().clone();
  }

  @Override
  public PrivateKey getPrivateKey(String alias) {
    Generation generation = generations.named(alias);
    return generation == null ? null : generation.key();
  }

  @Override
  public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine engine) {
    Generation current = generations.current();
    return current.alias(current.manager().chooseEngineClientAlias(keyType, issuers, engine));
  }

  @Override
  public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
    Generation current = generations.current();
    return current.alias(current.manager().chooseEngineServerAlias(keyType, issuers, engine));
  }
}
