package dev.weir.core.testkit;

import dev.weir.core.metrics.CheckResult;
import dev.weir.core.metrics.RefusalReason;
import dev.weir.core.metrics.WeirMetrics;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;

/** A {@link WeirMetrics} that keeps every event as a line of text, for tests to assert on. */
public final class RecordingMetrics implements WeirMetrics {

  private final List<String> events = new CopyOnWriteArrayList<>();
  private final Map<String, BooleanSupplier> discoveryHealth = new ConcurrentHashMap<>();

  /** Returns the events so far, e.g. {@code grpc pb.gubernator.V1/GetRateLimits OK 5000}. */
  public List<String> events() {
    return List.copyOf(events);
  }

  @Override
  public void grpcCall(String method, io.grpc.Status.Code code, long nanos) {
    events.add("grpc " + method + " " + code + " " + nanos);
  }

  @Override
  public void httpRequest(String route, int status, long nanos) {
    events.add("http " + route + " " + status + " " + nanos);
  }

  @Override
  public void checked(CheckResult result) {
    events.add("checked " + result.label());
  }

  @Override
  public void refused(RefusalReason reason) {
    events.add("refused " + reason.label());
  }

  @Override
  public void globalSend(long nanos, boolean ok) {
    events.add("global send " + (ok ? "ok" : "failed"));
  }

  @Override
  public void batchSent(String peer, int size, long nanos, boolean ok) {
    events.add("batch " + peer + " " + size + " " + (ok ? "ok" : "failed") + " " + nanos);
  }

  @Override
  public void globalBroadcast(long nanos, boolean ok) {
    events.add("global broadcast " + (ok ? "ok" : "failed"));
  }

  @Override
  public void discoveryError(String mechanism) {
    events.add("discovery error " + mechanism);
  }

  @Override
  public void watchDiscoveryHealth(String mechanism, BooleanSupplier healthy) {
    discoveryHealth.put(mechanism, healthy);
  }

  /**
   * Returns the watched health of discovery {@code mechanism}, read now: {@code "1"} or {@code "0"}, or
   * {@code "unwatched"} when nothing registered it.
   */
  public String discoveryHealth(String mechanism) {
    BooleanSupplier healthy = discoveryHealth.get(mechanism);
    return healthy == null ? "unwatched" : healthy.getAsBoolean() ? "1" : "0";
  }

  /** Returns how many events equal {@code event}, e.g. {@code count("discovery error dns")}. */
  public long count(String event) {
    return events.stream().filter(event::equals).count();
  }
}
