package dev.weir.discovery.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PeerInfoTest {

  @Test
  void toJson_thenRead_roundTrips() {
    PeerInfo info = new PeerInfo("[fd00::1]:1051", "dc \"east\"\\1");

    assertThat(PeerInfo.read(info.toJson())).isEqualTo(info);
  }

  @Test
  void read_whitespaceAndUnknownFields_keepsAddress() {
    assertThat(PeerInfo.read(" { \"x\" : \"y\" , \"grpc_address\" : \"10.0.0.1:1051\" } "))
        .isEqualTo(new PeerInfo("10.0.0.1:1051", ""));
  }

  @Test
  void toJson_withPeerAddress_roundTripsAndWithoutItOmitsTheField() {
    PeerInfo withPeer = new PeerInfo("10.0.0.1:1051", "", "10.0.0.1:1052");

    assertThat(PeerInfo.read(withPeer.toJson())).isEqualTo(withPeer);
    assertThat(withPeer.toJson()).contains("\"peer_address\":\"10.0.0.1:1052\"");
    assertThat(new PeerInfo("10.0.0.1:1051", "").toJson()).doesNotContain("peer_address");
  }

  @Test
  void read_gubernatorRegistration_addressAndDataCenter_noPeerAddress() {
    // What Gubernator's etcd pool puts: json.Marshal of its PeerInfo (json tags data-center,
    // http-address, grpc-address, is-owner with omitempty).
    String gubernator =
        "{\"data-center\":\"dc1\",\"http-address\":\"\",\"grpc-address\":\"10.0.0.1:1051\"}";

    assertThat(PeerInfo.read(gubernator)).isEqualTo(new PeerInfo("10.0.0.1:1051", "dc1", ""));
  }

  @Test
  void read_olderWeirRegistration_underscoreFields() {
    String olderWeir =
        "{\"grpc_address\":\"10.0.0.1:1051\",\"data_center\":\"dc1\","
            + "\"peer_address\":\"10.0.0.1:1052\"}";

    assertThat(PeerInfo.read(olderWeir))
        .isEqualTo(new PeerInfo("10.0.0.1:1051", "dc1", "10.0.0.1:1052"));
  }

  @Test
  void toJson_gubernatorsFields_thenWeirsPeerAddress_thenTheUnderscoreCopiesOlderWeirReads() {
    PeerInfo info = new PeerInfo("10.0.0.1:1051", "dc1", "10.0.0.1:1052");

    assertThat(info.toJson())
        .isEqualTo(
            "{\"grpc-address\":\"10.0.0.1:1051\",\"data-center\":\"dc1\","
                + "\"peer_address\":\"10.0.0.1:1052\","
                + "\"grpc_address\":\"10.0.0.1:1051\",\"data_center\":\"dc1\"}");
  }

  @Test
  void read_jsonWithoutAUsableAddress_refused() {
    assertThatThrownBy(() -> PeerInfo.read("{\"data_center\":\"a\"}"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> PeerInfo.read("{\"data-center\":\"a\",\"grpc-address\":\"\"}"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> PeerInfo.read("{\"grpc_address\":\"\\uZZZZ\"}"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void read_unknownFieldsOfAnyJsonType_ignoredAsGubernatorsJsonUnmarshalDoes() {
    assertThat(PeerInfo.read("{\"grpc-address\":\"10.0.0.3:1051\",\"is-owner\":true}"))
        .isEqualTo(new PeerInfo("10.0.0.3:1051", ""));
    assertThat(
            PeerInfo.read(
                "{\"weight\": -1.5e3, \"grpc-address\":\"10.0.0.3:1051\", \"off\": false,"
                    + " \"none\": null, \"tags\": [1, \"a]\", {\"b\": [true]}],"
                    + " \"meta\": {\"c\": {\"d\": \"}\"}, \"e\": []}, \"data-center\": \"dc1\"}"))
        .isEqualTo(new PeerInfo("10.0.0.3:1051", "dc1"));
    String deep = "[".repeat(100_000) + "]".repeat(100_000);
    assertThat(PeerInfo.read("{\"x\":" + deep + ",\"grpc-address\":\"10.0.0.3:1051\"}"))
        .isEqualTo(new PeerInfo("10.0.0.3:1051", ""));
  }

  @Test
  void read_nullForAKnownStringField_readAsEmpty() {
    assertThat(
            PeerInfo.read(
                "{\"grpc-address\":\"10.0.0.3:1051\",\"data-center\":null,"
                    + "\"peer_address\":null,\"grpc_address\":null,\"data_center\":\"dc2\"}"))
        .isEqualTo(new PeerInfo("10.0.0.3:1051", "dc2", ""));
    assertThatThrownBy(() -> PeerInfo.read("{\"grpc-address\":null}"))
        .hasMessage("no grpc-address (or grpc_address) field with an address");
  }

  @Test
  void read_knownFieldOfAnotherType_refusedNamingTheFieldItsValueAndWhatIsAllowed() {
    assertThatThrownBy(() -> PeerInfo.read("{\"grpc-address\":1051}"))
        .hasMessage(
            "the field \"grpc-address\" is 1051 (character 16): it must be a string, or null");
    assertThatThrownBy(
            () ->
                PeerInfo.read(
                    "{\"grpc-address\":\"10.0.0.3:1051\",\"data-center\":[\"dc1\"]}"))
        .hasMessage(
            "the field \"data-center\" is [\"dc1\"] (character 46): it must be a string, or null");
  }

  @Test
  void read_addressFieldThatIsNoAddress_refusedNamingTheFieldItsValueAndWhatIsAllowed() {
    assertThatThrownBy(() -> PeerInfo.read("{\"grpc-address\":\"hello\"}"))
        .hasMessage(
            "the field \"grpc-address\" is \"hello\": it must be a host:port address gRPC"
                + " can call (missing ':port')");
    assertThatThrownBy(() -> PeerInfo.read("{\"grpc_address\":\"10.0.0.3:0\"}"))
        .hasMessageStartingWith("the field \"grpc_address\" is \"10.0.0.3:0\": it must be");
  }

  @Test
  void read_peerAddressThatIsNoAddress_readAsAbsentKeepingTheMemberAndNamingFieldAndValue() {
    List<String> problems = new ArrayList<>();

    PeerInfo info =
        PeerInfo.read(
            "{\"grpc-address\":\"10.0.0.3:1051\",\"data-center\":\"dc1\","
                + "\"peer_address\":\"10.0.0.3\"}",
            problems::add);

    assertThat(info).isEqualTo(new PeerInfo("10.0.0.3:1051", "dc1", ""));
    assertThat(problems)
        .containsExactly(
            "the field \"peer_address\" is \"10.0.0.3\": it must be a host:port address gRPC"
                + " can call (missing ':port'); read as absent");
  }

  @Test
  void read_malformedValueOfAnUnknownField_refusedSayingWhere() {
    assertThatThrownBy(() -> PeerInfo.read("{\"grpc-address\":\"10.0.0.3:1051\",\"x\":tru}"))
        .hasMessage("the field \"x\" has no JSON value at character 36");
    assertThatThrownBy(() -> PeerInfo.read("{\"grpc-address\":\"10.0.0.3:1051\",\"x\":[1,}"))
        .hasMessage("the field \"x\" has no JSON value at character 36");
  }

  @Test
  void read_bareAddress_theMemberWithoutDataCenterAsGubernatorReadsItsOlderRegistrations() {
    assertThat(PeerInfo.read("10.0.0.1:1051")).isEqualTo(new PeerInfo("10.0.0.1:1051", ""));
  }

  @Test
  void read_neitherJsonNorAddress_refusedSayingWhy() {
    assertThatThrownBy(() -> PeerInfo.read("hello"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("not a JSON object, nor a bare host:port address (");
    assertThatThrownBy(() -> PeerInfo.read("{\"data-center\":\"dc1\"}"))
        .hasMessage("no grpc-address (or grpc_address) field with an address");
    assertThatThrownBy(() -> PeerInfo.read("{grpc-address:\"10.0.0.1:1051\"}"))
        .hasMessage("expected a field name in double quotes at character 1");
    assertThatThrownBy(() -> PeerInfo.read("{\"grpc_address\":\"\\uZZZZ\"}"))
        .hasMessage("a \\u escape is not 4 hex digits");
  }
}
