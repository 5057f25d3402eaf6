package dev.weir.discovery.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PeerInfoTest {

  @Test
  void toJson_thenParse_roundTrips() {
    PeerInfo info = new PeerInfo("[fd00::1]:1051", "dc \"east\"\\1");

    assertThat(PeerInfo.parse(info.toJson())).isEqualTo(info);
  }

  @Test
  void parse_whitespaceAndUnknownFields_keepsAddress() {
    assertThat(PeerInfo.parse(" { \"x\" : \"y\" , \"grpc_address\" : \"10.0.0.1:1051\" } "))
        .isEqualTo(new PeerInfo("10.0.0.1:1051", ""));
  }

  @Test
  void toJson_withPeerAddress_roundTripsAndWithoutItOmitsTheField() {
    PeerInfo withPeer = new PeerInfo("10.0.0.1:1051", "", "10.0.0.1:1052");

    assertThat(PeerInfo.parse(withPeer.toJson())).isEqualTo(withPeer);
    assertThat(withPeer.toJson()).contains("\"peer_address\":\"10.0.0.1:1052\"");
    assertThat(new PeerInfo("10.0.0.1:1051", "").toJson()).doesNotContain("peer_address");
  }

  @Test
  void parse_gubernatorRegistration_noPeerAddress() {
    String gubernator = "{\"grpc_address\":\"10.0.0.1:1051\",\"data_center\":\"\"}";

    assertThat(PeerInfo.parse(gubernator).peerAddress()).isEmpty();
  }

  @Test
  void parse_notJsonOrNoAddress_returnsNull() {
    assertThat(PeerInfo.parse("10.0.0.1:1051")).isNull();
    assertThat(PeerInfo.parse("{\"data_center\":\"a\"}")).isNull();
    assertThat(PeerInfo.parse("{\"grpc_address\":\"\\uZZZZ\"}")).isNull();
  }
}
