package dev.weir.core.quota;

import java.util.List;

/** The stream side of quota sharing: takes the shares owners push to proxies connected here. */
@FunctionalInterface
public interface QuotaShareReceiver {

  /** Hands {@code pushes} to the streams of their clients; returns how many reached a stream. */
  int deliver(List<QuotaPush> pushes);
}
