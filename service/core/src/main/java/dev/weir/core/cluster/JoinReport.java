package dev.weir.core.cluster;

import dev.weir.core.cluster.peer.PeerException;
import dev.weir.core.config.GoDurations;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * What a joining node says about the peers its first round of calls (the copy request and the
 * return notice) did not reach: one line naming each such peer and why, in words. Peers that were
 * not reachable or did not answer in time are expected while a cluster starts (the line is then
 * {@linkplain #expected() expected}); a peer that refused the call is not.
 */
final class JoinReport {

  private final List<String> unanswered = new ArrayList<>();
  private final int asked;
  private boolean expected = true;
  private boolean credentials;

  private JoinReport(int asked) {
    this.asked = asked;
  }

  /**
   * Reads the outcome of the calls made to each peer, by address, once {@code waited} has passed: a
   * peer is unanswered when any of its calls failed or is still running.
   */
  static JoinReport of(Map<String, List<CompletableFuture<?>>> callsByPeer, Duration waited) {
    JoinReport report = new JoinReport(callsByPeer.size());
    callsByPeer.forEach(
        (peer, calls) -> {
          for (CompletableFuture<?> call : calls) {
            Optional<String> reason = report.reason(call, waited);
            if (reason.isPresent()) {
              report.unanswered.add(peer + " (" + reason.get() + ")");
              return;
            }
          }
        });
    return report;
  }

  private Optional<String> reason(CompletableFuture<?> call, Duration waited) {
    if (!call.isDone()) {
      return Optional.of("no answer within " + GoDurations.format(waited));
    }
    if (!call.isCompletedExceptionally()) {
      return Optional.empty();
    }
    Throwable error = failure(call);
    Status status = Status.fromThrowable(error);
    return Optional.of(
        switch (foundDown(status) ? Status.Code.UNAVAILABLE : status.getCode()) {
          case UNAVAILABLE -> "not reachable";
          case DEADLINE_EXCEEDED -> "no answer within " + GoDurations.format(waited);
          default -> {
            expected = false;
            credentials |=
                status.getCode() == Status.Code.UNAUTHENTICATED
                    || status.getCode() == Status.Code.PERMISSION_DENIED;
            yield "refused: "
                + (status.getCode() == Status.Code.UNKNOWN
                    ? String.valueOf(error.getMessage())
                    : status.getCode()
                        + (status.getDescription() == null ? "" : ": " + status.getDescription()));
          }
        });
  }

  /**
   * Returns whether a call ended because its peer was found down while it was in flight: the peer
   * client then cancels its calls' context with a {@link PeerException}, which gRPC reports as
   * {@code CANCELLED: Context cancelled}.
   */
  private static boolean foundDown(Status status) {
    return status.getCode() == Status.Code.CANCELLED && status.getCause() instanceof PeerException;
  }

  private static Throwable failure(CompletableFuture<?> call) {
    try {
      call.join();
      throw new IllegalStateException("the call did not fail");
    } catch (CompletionException e) {
      return e.getCause() instanceof ExecutionException nested && nested.getCause() != null
          ? nested.getCause()
          : e.getCause();
    } catch (RuntimeException e) {
      return e;
    }
  }

  /** Returns whether every peer answered. */
  boolean complete() {
    return unanswered.isEmpty();
  }

  /** Returns whether every unanswered peer was only unreachable or slow, as starting peers are. */
  boolean expected() {
    return expected;
  }

  /**
   * Returns the line to log, naming every unanswered peer and why, with a hint at the peers'
   * credentials when one refused this node's.
   */
  String describe() {
    String which = unanswered.size() + " of " + asked + " peers";
    String list = String.join(", ", unanswered);
    if (expected) {
      return "joined before "
          + which
          + " answered: "
          + list
          + "; expected while they are still starting: this node keeps telling them it is back"
          + " until they answer, and they hand its keys over then";
    }
    return "joined without an answer from "
        + which
        + ": "
        + list
        + (credentials
            ? "; check that every node has the same WEIR_PEER_SECRET or trusts the same CA"
                + " (docs/cluster.md#peer-protocol)"
            : "");
  }
}
