package dev.weir.tls;

import java.util.List;

/**
 * The outcome of one {@link TlsIdentity#reload()}: which files were taken up and why the others
 * could not be used.
 *
 * @param certificateReloaded whether a changed certificate and key are presented from now on
 * @param casReloaded whether a changed CA file is trusted from now on
 * @param failures one message per file that changed but could not be used, naming the file; its
 *     previous contents stay in use
 */
public record TlsReload(boolean certificateReloaded, boolean casReloaded, List<String> failures) {

  /** Creates an outcome; {@code failures} is copied. */
  public TlsReload {
    failures = List.copyOf(failures);
  }

  /** Returns whether anything new is in use. */
  public boolean changed() {
    return certificateReloaded || casReloaded;
  }
}
