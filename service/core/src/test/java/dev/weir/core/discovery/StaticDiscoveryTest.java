package dev.weir.core.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.HostPort;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class StaticDiscoveryTest {

  @Test
  void entriesWithPeerPorts_membersAreTheGrpcAddressesPeerAddressesAsGiven() {
    StaticDiscovery discovery =
        new StaticDiscovery(
            "127.0.0.1:1051",
            List.of("127.0.0.1:1051@1052", "127.0.0.1:2051@2052", "[::1]:3051@3052", "h:4051"));

    assertThat(discovery.peers())
        .containsExactlyInAnyOrder("127.0.0.1:1051", "127.0.0.1:2051", "[::1]:3051", "h:4051");
    assertThat(discovery.peerAddress("127.0.0.1:2051")).hasValue("127.0.0.1:2052");
    assertThat(discovery.peerAddress("[::1]:3051")).hasValue("[::1]:3052");
    assertThat(discovery.peerAddress("h:4051")).isEmpty();
    assertThat(discovery.onlySelf()).isFalse();
  }

  @Test
  void emptyListOrSelfAlone_onlySelf() {
    assertThat(new StaticDiscovery("a:1", List.of()).onlySelf()).isTrue();
    assertThat(new StaticDiscovery("a:1", List.of("a:1@2")).onlySelf()).isTrue();
    assertThat(new StaticDiscovery("a:1", List.of()).peers()).isEqualTo(Set.of("a:1"));
    assertThat(new StaticDiscovery("a:1", List.of("b:1")).onlySelf()).isFalse();
  }

  @ParameterizedTest
  @CsvSource({
    "'host', is not host:port or host:port@peerPort",
    "'host:x', is not host:port or host:port@peerPort",
    "'host:0', has port 0",
    "'host:1051@', has peer port ''",
    "'host:1051@abc', has peer port 'abc'",
    "'host:1051@70000', has peer port '70000'",
    "'host:1051@\uff11\uff10\uff15\uff12', has peer port '\uff11\uff10\uff15\uff12'",
    "'host:1051@++1052', has peer port '++1052'",
    "'[weir-0]:1051', brackets hold only an IPv6 address",
    "'a:1;b:2', it holds ';'; separate entries with commas",
    "'a:1 b:2', it holds a space; separate entries with commas",
    "'a:1@2 b:3@4', it holds a space; separate entries with commas",
    "'http://b:2', without a scheme such as 'http://'",
    "'::1:1051', an IPv6 host must be written in brackets",
    "'a/b:1051', host 'a/b' holds '/'",
    "':1051', has no host",
  })
  void parse_badEntry_failsNamingIt(String entry, String problem) {
    assertThatThrownBy(() -> StaticDiscovery.parse(entry))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'" + entry + "'")
        .hasMessageContaining(problem);
  }

  @ParameterizedTest
  @CsvSource({"'weir_1:1051', host 'weir_1' is refused by gRPC", "'a..b:1051@1052', host 'a..b'"})
  void parse_hostGrpcRefuses_failsNamingTheEntryAndTheHost(String entry, String problem) {
    assertThatThrownBy(() -> StaticDiscovery.parse(entry))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("static peer '" + entry + "' is not host:port or host:port@peerPort")
        .hasMessageContaining(problem);
  }

  @Test
  void parse_hostCharacterNoHostHolds_messageGivesTheGrpcHostRuleWithoutUnderscore() {
    assertThatThrownBy(() -> StaticDiscovery.parse("a!b:1051"))
        .hasMessage(
            "static peer 'a!b:1051' is not host:port or host:port@peerPort: host 'a!b' holds '!';"
                + " give "
                + HostPort.GRPC_HOSTS)
        .message()
        .doesNotContain("'-' and '_'");
  }

  @Test
  void parse_goodEntries() {
    assertThat(StaticDiscovery.parse(" 10.0.0.1:1051@1052 "))
        .isEqualTo(new StaticDiscovery.Entry("10.0.0.1:1051", Optional.of("10.0.0.1:1052")));
    assertThat(StaticDiscovery.parse("weir-0.weir:1051"))
        .isEqualTo(new StaticDiscovery.Entry("weir-0.weir:1051", Optional.empty()));
  }
}
