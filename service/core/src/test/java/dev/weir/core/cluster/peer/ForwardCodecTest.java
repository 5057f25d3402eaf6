package dev.weir.core.cluster.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnknownFieldSet;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.WireSamples;
import dev.weir.proto.gubernator.ForwardAnswers;
import dev.weir.proto.gubernator.ForwardBatch;
import dev.weir.proto.gubernator.RateLimitReq;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link ForwardCodec} against protobuf-java's generated classes: what it writes parses to what
 * {@link PeerProtos} would have sent, and what it reads from any bytes is what the generated parser
 * and {@link PeerProtos} read.
 */
class ForwardCodecTest {

  @Test
  void encodeBatch_randomItems_parsesToWhatPeerProtosSends() throws Exception {
    Random random = new Random(20261204);
    for (int i = 0; i < 2_000; i++) {
      long id = random.nextInt(4) == 0 ? 0 : random.nextLong();
      List<RateLimitRequest> items = randomRequests(random);
      ForwardBatch.Builder expected = ForwardBatch.newBuilder().setId(id);
      items.forEach(r -> expected.addRequests(PeerProtos.toProto(r)));

      byte[] bytes = ForwardCodec.encode(new ForwardCodec.Batch(id, items));

      assertThat(ForwardBatch.parseFrom(bytes)).isEqualTo(expected.build());
    }
  }

  @Test
  void encodeBatch_metadataOverTheBound_sendsOnlyTimeZoneAndTraceparent() throws Exception {
    Map<String, String> metadata = new LinkedHashMap<>();
    metadata.put("big", "x".repeat(PeerProtos.MAX_FORWARDED_METADATA_BYTES));
    metadata.put("time_zone", "Europe/Paris");
    metadata.put(PeerProtos.TRACEPARENT, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    RateLimitRequest item = new RateLimitRequest("n", "k", 1, 10, 1000, 0, 0, 0, 0, metadata);

    ForwardBatch sent =
        ForwardBatch.parseFrom(ForwardCodec.encode(new ForwardCodec.Batch(3, List.of(item))));

    assertThat(sent.getRequests(0).getMetadataMap())
        .containsOnlyKeys("time_zone", PeerProtos.TRACEPARENT);
  }

  @Test
  void decodeBatch_randomBatches_readAsTheGeneratedParserReadsThem() throws Exception {
    Random random = new Random(42);
    for (int i = 0; i < 2_000; i++) {
      ForwardBatch.Builder batch = ForwardBatch.newBuilder().setId(random.nextLong());
      randomRequests(random).forEach(r -> batch.addRequests(PeerProtos.toProto(r)));
      assertBatchDecodesLikeProtobuf(batch.build().toByteArray());
    }
  }

  @Test
  void decodeBatch_unknownFieldsAndRandomBytes_readOrRefusedAsTheGeneratedParserDoes()
      throws Exception {
    RateLimitReq unusual =
        RateLimitReq.newBuilder()
            .setName("n")
            .setUniqueKey("k")
            .putMetadata("trace", "1")
            .setUnknownFields(unknown(99))
            .build();
    assertBatchDecodesLikeProtobuf(
        ForwardBatch.newBuilder().setId(5).addRequests(unusual).build().toByteArray());
    assertBatchDecodesLikeProtobuf(
        ForwardBatch.newBuilder().setId(6).setUnknownFields(unknown(7)).build().toByteArray());

    Random random = new Random(7);
    byte[] good =
        ForwardBatch.newBuilder()
            .setId(9)
            .addRequests(PeerProtos.toProto(randomRequest(random)))
            .build()
            .toByteArray();
    for (int i = 0; i < 5_000; i++) {
      byte[] bytes = good.clone();
      bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256);
      assertBatchDecodesLikeProtobuf(bytes);
    }
  }

  @Test
  void decodeBatch_moreItemsThanACall_readsUpToTheFirstOneOverAndStillTheId() throws Exception {
    ForwardBatch.Builder batch = ForwardBatch.newBuilder();
    RateLimitReq item = RateLimitReq.newBuilder().setName("n").setUniqueKey("k").build();
    for (int i = 0; i < RateLimitService.MAX_BATCH_SIZE + 50; i++) {
      batch.addRequests(item);
    }
    byte[] itemsThenId =
        concat(batch.build().toByteArray(), ForwardBatch.newBuilder().setId(77).build());

    ForwardCodec.Batch read = ForwardCodec.decodeBatch(itemsThenId);

    assertThat(read.requests()).hasSize(RateLimitService.MAX_BATCH_SIZE + 1);
    assertThat(read.id()).isEqualTo(77);
  }

  @Test
  void encodeAnswers_answersAndRefusals_writeTheGeneratedMessagesBytes() {
    Random random = new Random(11);
    for (int i = 0; i < 2_000; i++) {
      long id = random.nextInt(4) == 0 ? 0 : random.nextLong();
      List<RateLimitResponse> answers = new ArrayList<>();
      for (int k = random.nextInt(12); k > 0; k--) {
        answers.add(WireSamples.answer(random));
      }
      ForwardAnswers.Builder expected = ForwardAnswers.newBuilder().setId(id);
      answers.forEach(a -> expected.addRateLimits(PeerProtos.toProto(a)));

      assertThat(ForwardCodec.encode(ForwardCodec.Answers.of(id, answers)))
          .isEqualTo(expected.build().toByteArray());
    }
    assertThat(ForwardCodec.encode(ForwardCodec.Answers.refused(4, 11, "too many \uD800")))
        .isEqualTo(
            ForwardAnswers.newBuilder()
                .setId(4)
                .setErrorCode(11)
                .setError("too many \uD800")
                .build()
                .toByteArray());
  }

  @Test
  void decodeAnswers_randomAndMalformed_readAsTheGeneratedParserReadsThem() throws Exception {
    Random random = new Random(13);
    for (int i = 0; i < 2_000; i++) {
      ForwardAnswers.Builder answers =
          ForwardAnswers.newBuilder()
              .setId(random.nextLong())
              .setErrorCode(random.nextInt(3) == 0 ? random.nextInt(17) : 0);
      for (int k = random.nextInt(12); k > 0; k--) {
        answers.addRateLimits(PeerProtos.toProto(WireSamples.answer(random)));
      }
      if (random.nextInt(10) == 0) {
        answers.setUnknownFields(unknown(50));
      }
      byte[] bytes = answers.build().toByteArray();
      assertAnswersDecodeLikeProtobuf(bytes);
      if (bytes.length > 0) {
        bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256);
        assertAnswersDecodeLikeProtobuf(bytes);
      }
    }
  }

  private static void assertBatchDecodesLikeProtobuf(byte[] bytes) throws Exception {
    ForwardBatch expected;
    try {
      expected = ForwardBatch.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {
      assertThatThrownBy(() -> ForwardCodec.decodeBatch(bytes))
          .isInstanceOf(InvalidProtocolBufferException.class)
          .hasMessage(e.getMessage());
      return;
    }
    ForwardCodec.Batch read = ForwardCodec.decodeBatch(bytes);
    assertThat(read.id()).isEqualTo(expected.getId());
    assertThat(read.requests())
        .isEqualTo(expected.getRequestsList().stream().map(PeerProtos::fromProto).toList());
  }

  private static void assertAnswersDecodeLikeProtobuf(byte[] bytes) throws Exception {
    ForwardAnswers expected;
    try {
      expected = ForwardAnswers.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {
      assertThatThrownBy(() -> ForwardCodec.decodeAnswers(bytes))
          .isInstanceOf(InvalidProtocolBufferException.class)
          .hasMessage(e.getMessage());
      return;
    }
    assertThat(ForwardCodec.decodeAnswers(bytes))
        .isEqualTo(
            new ForwardCodec.Answers(
                expected.getId(),
                expected.getRateLimitsList().stream().map(PeerProtos::fromProto).toList(),
                expected.getErrorCode(),
                expected.getError()));
  }

  private static List<RateLimitRequest> randomRequests(Random random) {
    List<RateLimitRequest> items = new ArrayList<>();
    for (int k = random.nextInt(12); k > 0; k--) {
      items.add(randomRequest(random));
    }
    return items;
  }

  private static RateLimitRequest randomRequest(Random random) {
    Map<String, String> metadata = new LinkedHashMap<>();
    for (int k = random.nextInt(4) == 0 ? random.nextInt(4) : 0; k > 0; k--) {
      metadata.put(
          random.nextInt(5) == 0 ? "ключ\uD83D\uDE00" + k : "k" + k,
          random.nextInt(6) == 0 ? "v".repeat(300) : "v" + random.nextInt(3));
    }
    return new RateLimitRequest(
        random.nextBoolean() ? "requests_per_sec" : random.nextInt(9) == 0 ? "" : "n" + random.nextInt(1000),
        random.nextInt(8) == 0 ? "ключ:ü" : "account:" + random.nextLong(),
        WireSamples.edge(random),
        WireSamples.edge(random),
        WireSamples.edge(random),
        random.nextInt(6) - 1,
        random.nextInt(64) - (random.nextInt(10) == 0 ? 100 : 0),
        WireSamples.edge(random),
        random.nextBoolean() ? WireSamples.edge(random) : 0,
        metadata);
  }

  private static UnknownFieldSet unknown(int field) {
    return UnknownFieldSet.newBuilder()
        .addField(field, UnknownFieldSet.Field.newBuilder().addVarint(5).build())
        .build();
  }

  private static byte[] concat(byte[] first, ForwardBatch second) {
    byte[] tail = second.toByteArray();
    byte[] out = new byte[first.length + tail.length];
    System.arraycopy(first, 0, out, 0, first.length);
    System.arraycopy(tail, 0, out, first.length, tail.length);
    return out;
  }
}
