package dev.weir.discovery.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

class EtcdDiscoveryTest {

  @Test
  void otherPrefix_prefixThatStartsAnotherClustersPrefix_namesTheirsAndTheRule() {
    assertThat(EtcdDiscovery.otherPrefix("/weir", "/weir210.0.0.2:1051", "10.0.0.2:1051"))
        .isEqualTo(
            "it is not the prefix /weir followed by its grpc-address 10.0.0.2:1051 but a"
                + " registration under the prefix /weir2 of another cluster; no cluster's prefix"
                + " may start another's: end each with / and do not nest them");
  }

  @Test
  void otherPrefix_nestedPrefix_takenForAnotherClusters() {
    assertThat(EtcdDiscovery.otherPrefix("/weir/", "/weir/eu/10.0.0.2:1051", "10.0.0.2:1051"))
        .startsWith(
            "it is not the prefix /weir/ followed by its grpc-address 10.0.0.2:1051 but a"
                + " registration under the prefix /weir/eu/ of another cluster;");
  }

  @Test
  void otherPrefix_prefixFollowedByTheAddress_isNoOtherClusters() {
    assertThat(EtcdDiscovery.otherPrefix("/weir/", "/weir/10.0.0.2:1051", "10.0.0.2:1051"))
        .isNull();
    assertThat(EtcdDiscovery.otherPrefix("/weir", "/weir10.0.0.2:1051", "10.0.0.2:1051"))
        .isNull();
  }

  @Test
  void otherPrefix_keyNamedAfterAnotherAddress_cannotBeToldApart() {
    assertThat(EtcdDiscovery.otherPrefix("/weir", "/weir2/10.0.0.2:80", "10.0.0.2:1051"))
        .isNull();
  }

  @Test
  void prefixWarning_prefixWithoutTrailingSlash_warnsNamingTheVariableSetAndValue() {
    assertThat(EtcdDiscovery.prefixWarning("GUBER_ETCD_KEY_PREFIX", "/gubernator-peers"))
        .isEqualTo(
            "GUBER_ETCD_KEY_PREFIX is '/gubernator-peers', which does not end with '/': etcd"
                + " lists under it the keys of every prefix it starts ('/gubernator-peers2');"
                + " end each cluster's prefix with / unless nodes that use it as is (Gubernator's"
                + " default) share it");
    assertThat(EtcdDiscovery.prefixWarning("WEIR_ETCD_KEY_PREFIX", "/weir-peers/")).isNull();
  }

  @Test
  void prefixLevel_gubernatorsDefaultAtInfo_anyOtherAtWarn() {
    assertThat(EtcdDiscovery.prefixLevel("/gubernator-peers")).isEqualTo(Level.INFO);
    assertThat(EtcdDiscovery.prefixLevel("/weir")).isEqualTo(Level.WARN);
  }
}
