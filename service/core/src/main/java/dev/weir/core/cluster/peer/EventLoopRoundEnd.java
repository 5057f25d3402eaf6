package dev.weir.core.cluster.peer;

import dev.weir.core.cluster.batch.RoundEnd;
import io.grpc.netty.shaded.io.netty.util.concurrent.EventExecutor;
import io.grpc.netty.shaded.io.netty.util.internal.ThreadExecutorMap;
import java.util.concurrent.RejectedExecutionException;

/**
 * The round of grpc-java's Netty event loops: a task deferred from one of their threads runs on
 * it among the loop's tasks, after the reads of the same wake-up (every connection that was ready)
 * have been handled; any other thread has no rounds. A loop thread that blocks before its round
 * ends (waiting for a decision it forwarded) never runs the task: the batcher holds only that
 * thread's own items for it, and embedders are told not to wait on a loop thread.
 */
final class EventLoopRoundEnd implements RoundEnd {

  /** The one instance: the round is the calling thread's. */
  static final EventLoopRoundEnd INSTANCE = new EventLoopRoundEnd();

  private EventLoopRoundEnd() {}

  @Override
  public boolean defer(Runnable task) {
    EventExecutor loop = ThreadExecutorMap.currentExecutor();
    if (loop == null || !loop.inEventLoop()) {
      return false;
    }
    try {
      loop.execute(task);
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }
}
