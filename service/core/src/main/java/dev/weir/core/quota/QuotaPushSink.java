package dev.weir.core.quota;

import java.util.List;

/** Where a bucket's owner sends the shares it pushes, to reach the proxies' streams. */
@FunctionalInterface
public interface QuotaPushSink {

  /** Sends {@code pushes}, each to the node of its client's stream; never blocks. */
  void send(List<QuotaPush> pushes);
}
