package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.WireSamples;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class EncodedMetadataTest {

  @Test
  void answersCarryingIt_decodeAsTheAnswersWithThePlainMap_andItReadsAsIt() throws Exception {
    Random random = new Random(5);
    for (int i = 0; i < 1_000; i++) {
      Map<String, String> plain = new LinkedHashMap<>();
      for (int k = random.nextInt(4); k > 0; k--) {
        plain.put(text(random), text(random));
      }
      EncodedMetadata encoded = EncodedMetadata.of(plain);
      List<RateLimitResponse> withPlain =
          List.of(
              WireSamples.answer(random).withMetadata(plain),
              RateLimitResponse.error("x").withMetadata(plain));
      List<RateLimitResponse> withEncoded =
          withPlain.stream().map(a -> a.withMetadata(encoded)).toList();

      // A map's entries may be written in any order, so the bytes are compared through a decode.
      if (!plain.isEmpty()) {
        assertThat(withEncoded).allSatisfy(a -> assertThat(a.metadata()).isSameAs(encoded));
      }
      assertThat(
              ForwardCodec.decodeAnswers(
                  ForwardCodec.encode(ForwardCodec.Answers.of(i, withEncoded))))
          .isEqualTo(ForwardCodec.Answers.of(i, withPlain));
      if (plain.size() <= 1) {
        assertThat(ForwardCodec.encode(ForwardCodec.Answers.of(i, withEncoded)))
            .isEqualTo(ForwardCodec.encode(ForwardCodec.Answers.of(i, withPlain)));
      }
      assertThat(encoded).isEqualTo(plain).containsExactlyEntriesOf(plain);
      assertThat(encoded.hashCode()).isEqualTo(plain.hashCode());
    }
  }

  private static String text(Random random) {
    String[] samples = {"", "owner", "10.0.0.1:1051", "z\u00e9\u4e2d\uD83D\uDE00", "k".repeat(300)};
    return samples[random.nextInt(samples.length)] + random.nextInt(3);
  }
}
