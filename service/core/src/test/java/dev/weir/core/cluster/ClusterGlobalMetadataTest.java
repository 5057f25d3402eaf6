package dev.weir.core.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.testkit.LocalCluster;
import dev.weir.core.testkit.LocalCluster.Node;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The metadata a GLOBAL item's hits carry to the key's owner. */
class ClusterGlobalMetadataTest {

  private LocalCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void flush_itemWithTraceContextAndOtherEntries_ownerReceivesOnlyTheTimeZoneAndTheSender() {
    cluster = LocalCluster.start(2, ClusterGlobalTest.SETTINGS);
    Node owner = cluster.ownerOf("g_acct");
    Node other = cluster.nonOwnersOf("g_acct").get(0);
    List<RateLimitRequest> received = new CopyOnWriteArrayList<>();
    owner.beforeAnswerForwarded(received::addAll);

    other.check(
        RateLimitRequest.builder("g", "acct")
            .hits(1)
            .limit(10)
            .duration(GregorianInterval.HOURS.code())
            .behavior(Behavior.GLOBAL | Behavior.DURATION_IS_GREGORIAN)
            .metadata(
                Map.of(
                    GregorianInterval.TIME_ZONE_METADATA, "Europe/Paris",
                    "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                    "tracestate", "vendor=1",
                    "caller", "note"))
            .build());
    other.cluster().global().flushHits().join();

    assertThat(received).hasSize(1);
    assertThat(received.get(0).metadata())
        .isEqualTo(
            Map.of(
                GregorianInterval.TIME_ZONE_METADATA,
                "Europe/Paris",
                PeerProtos.QUEUED_BY,
                other.address()));
  }
}
