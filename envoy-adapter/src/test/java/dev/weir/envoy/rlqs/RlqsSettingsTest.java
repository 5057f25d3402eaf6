package dev.weir.envoy.rlqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RlqsSettingsTest {

  @Test
  void maxBuckets_defaultsToFiftyThousand_andIsRead() {
    assertThat(RlqsSettings.DEFAULTS.maxBuckets()).isEqualTo(50_000);
    assertThat(
            RlqsSettings.fromEnvironment(Map.of("WEIR_RLQS_MAX_BUCKETS", "2000")).maxBuckets())
        .isEqualTo(2_000);
  }

  @Test
  void maxBuckets_outOfRange_namesTheVariableTheValueAndWhatIsAllowed() {
    assertThatThrownBy(
            () -> RlqsSettings.fromEnvironment(Map.of("WEIR_RLQS_MAX_BUCKETS", "0")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_RLQS_MAX_BUCKETS")
        .hasMessageContaining("'0'")
        .hasMessageContaining("1 to 10000000");
  }

  @Test
  void maxNodeBucketBytes_defaultsTo256MiB_andIsRead() {
    assertThat(RlqsSettings.DEFAULTS.maxNodeBucketBytes()).isEqualTo(256L << 20);
    assertThat(
            RlqsSettings.fromEnvironment(Map.of("WEIR_RLQS_MAX_NODE_BUCKET_BYTES", "1048576"))
                .maxNodeBucketBytes())
        .isEqualTo(1L << 20);
  }

  @Test
  void maxNodeBucketBytes_outOfRange_namesTheVariableTheValueAndWhatIsAllowed() {
    assertThatThrownBy(
            () ->
                RlqsSettings.fromEnvironment(
                    Map.of("WEIR_RLQS_MAX_NODE_BUCKET_BYTES", "1000")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_RLQS_MAX_NODE_BUCKET_BYTES")
        .hasMessageContaining("'1000'")
        .hasMessageContaining("1048576 to 68719476736");
  }
}
