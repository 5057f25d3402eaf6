package dev.weir.ring;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class PeerHashTest {

  private static final String[] KEYS = {
    "", "a", "requests_per_sec_account:12345", "envoy:4:edge/4:path_4:/api", "caf\u00e9", "\u65e5\u672c",
    "emoji \ud83d\ude00 key", "unpaired \ud83d surrogate"
  };

  @ParameterizedTest
  @EnumSource(PeerHash.class)
  void hashOfText_equalsHashOfItsUtf8Bytes(PeerHash hash) {
    for (String key : KEYS) {
      assertThat(hash.hash(key))
          .as("%s of '%s'", hash, key)
          .isEqualTo(hash.hash(key.getBytes(StandardCharsets.UTF_8)));
    }
  }

  @ParameterizedTest
  @EnumSource(names = {"FNV1A", "FNV1"})
  void hashOfEmptyText_isTheOffsetBasis(PeerHash hash) {
    assertThat(hash.hash("")).isEqualTo(0xcbf29ce484222325L);
  }
}
