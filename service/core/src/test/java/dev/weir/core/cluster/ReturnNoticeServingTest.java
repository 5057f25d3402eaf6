package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A node that tells a peer it is back answers that peer's probes as a member from then on: a probe
 * answered "not serving" right after the return notice would take it down again at that peer (seen
 * in {@code EmbeddedMemberJarIT}: the peer then owned every key and handed nothing back).
 */
class ReturnNoticeServingTest {

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void restart_returnNoticeHandled_returningNodeAlreadyAnswersProbes() throws Exception {
    cluster = LocalCluster.start(2, ClusterForwardingTest.SETTINGS);
    Node asked = cluster.node(0);
    CompletableFuture<Boolean> servingAtNotice = new CompletableFuture<>();
    asked.beforeAnnounce(
        leaving -> {
          Node fresh = cluster.joining();
          if (!leaving && fresh != null) {
            servingAtNotice.complete(fresh.cluster().serving());
          }
        });

    cluster.restart(cluster.node(1));

    assertThat(servingAtNotice.get(10, TimeUnit.SECONDS))
        .as("the returning node answers probes when its return notice arrives")
        .isTrue();
  }
}
