package dev.weir.gubernator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnknownFieldSet;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.testkit.WireSamples;
import dev.weir.proto.gubernator.Algorithm;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link GetRateLimitsCodec} against protobuf-java's generated classes: what it reads from any
 * bytes is what {@code GetRateLimitsReq.parseFrom} and {@link ProtoMapping} read, and what it
 * writes is byte for byte what {@code GetRateLimitsResp} writes.
 */
class GetRateLimitsCodecTest {

  private static final int MAX = RateLimitService.MAX_BATCH_SIZE;

  /** An item with no field set, as it is on the wire. */
  private static final byte[] EMPTY_ITEM = {0x0A, 0x00};

  /** An item with metadata and a field unknown to the schema, which only the generated parser reads. */
  private static final RateLimitReq TRACED =
      RateLimitReq.newBuilder()
          .setName("n")
          .setUniqueKey("k")
          .putMetadata("trace", "1")
          .setUnknownFields(
              UnknownFieldSet.newBuilder()
                  .addField(99, UnknownFieldSet.Field.newBuilder().addVarint(5).build())
                  .build())
          .build();

  @Test
  void decode_randomRequests_readAsTheGeneratedParserReadsThem() throws Exception {
    Random random = new Random(20261201);
    for (int i = 0; i < 2_000; i++) {
      assertDecodesLikeProtobuf(randomRequest(random).toByteArray());
    }
  }

  @Test
  void decodeCommon_randomRequests_readWithoutTheGeneratedParser() throws Exception {
    Random random = new Random(42);
    for (int i = 0; i < 2_000; i++) {
      byte[] bytes = randomRequest(random).toByteArray();

      assertThat(GetRateLimitsCodec.decodeCommon(bytes))
          .isEqualTo(ProtoMapping.toModel(GetRateLimitsReq.parseFrom(bytes)));
    }
  }

  @Test
  void decode_commonItem_readsEveryField() throws Exception {
    RateLimitReq item =
        RateLimitReq.newBuilder()
            .setName("requests_per_sec")
            .setUniqueKey("account:1")
            .setHits(-3)
            .setLimit(Long.MAX_VALUE)
            .setDuration(3_600_000)
            .setAlgorithm(Algorithm.SLIDING_WINDOW)
            .setBehaviorValue(2 | 8)
            .setBurst(7)
            .setCreatedAt(1_767_225_600_000L)
            .build();

    assertDecodesLikeProtobuf(GetRateLimitsReq.newBuilder().addRequests(item).build().toByteArray());
    assertThat(GetRateLimitsCodec.decode(GetRateLimitsReq.newBuilder().addRequests(item).build()
            .toByteArray()))
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.name()).isEqualTo("requests_per_sec");
              assertThat(r.uniqueKey()).isEqualTo("account:1");
              assertThat(r.hits()).isEqualTo(-3);
              assertThat(r.limit()).isEqualTo(Long.MAX_VALUE);
              assertThat(r.duration()).isEqualTo(3_600_000);
              assertThat(r.algorithm()).isEqualTo(Algorithm.SLIDING_WINDOW_VALUE);
              assertThat(r.behavior()).isEqualTo(10);
              assertThat(r.burst()).isEqualTo(7);
              assertThat(r.createdAt()).isEqualTo(1_767_225_600_000L);
            });
  }

  @Test
  void decodeCommon_itemsOfTheSchema_readWithoutTheGeneratedParser() throws Exception {
    RateLimitReq common = RateLimitReq.newBuilder().setName("n").setUniqueKey("k").setHits(1).build();
    RateLimitReq withMetadata = common.toBuilder().putMetadata("trace", "1").build();

    assertThat(GetRateLimitsCodec.decodeCommon(wrap(common.toByteArray()))).hasSize(1);
    assertThat(GetRateLimitsCodec.decodeCommon(new byte[0])).isEmpty();
    assertThat(GetRateLimitsCodec.decodeCommon(wrap(withMetadata.toByteArray())))
        .containsExactly(ProtoMapping.toModel(withMetadata));
    assertThat(GetRateLimitsCodec.decodeCommon(wrap(TRACED.toByteArray()))).isNull();
    assertThat(GetRateLimitsCodec.decodeCommon(concat(wrap(withName("n")), varintField(9, 1))))
        .isNull();
  }

  @Test
  void decode_metadataUnknownFieldsAndOtherWireTypes_readAsTheGeneratedParserReadsThem()
      throws Exception {
    RateLimitReq withMetadata =
        RateLimitReq.newBuilder().setName("n").setUniqueKey("k").putMetadata("trace", "1").build();
    assertDecodesLikeProtobuf(wrap(withMetadata.toByteArray()));
    assertThat(GetRateLimitsCodec.decode(wrap(withMetadata.toByteArray())).get(0).metadata())
        .containsExactly(Map.entry("trace", "1"));

    byte[] unknownInItem = concat(withName("n"), varintField(99, 5));
    assertDecodesLikeProtobuf(wrap(unknownInItem));
    assertDecodesLikeProtobuf(concat(wrap(withName("a")), varintField(2, 1), wrap(withName("b"))));

    byte[] nameAsVarint = concat(varintField(1, 7), withName("second"));
    assertDecodesLikeProtobuf(wrap(nameAsVarint));
    byte[] hitsAsBytes = concat(bytesField(3, new byte[] {1, 2}), withName("n"));
    assertDecodesLikeProtobuf(wrap(hitsAsBytes));
  }

  @Test
  void decode_repeatedField_lastOneWins() throws Exception {
    byte[] item = concat(withName("first"), varintField(3, 4), withName("last"), varintField(3, 9));

    assertDecodesLikeProtobuf(wrap(item));
    assertThat(GetRateLimitsCodec.decode(wrap(item)).get(0).name()).isEqualTo("last");
    assertThat(GetRateLimitsCodec.decode(wrap(item)).get(0).hits()).isEqualTo(9);
  }

  @Test
  void decode_malformed_failsWithTheGeneratedParsersError() {
    byte[] good = wrap(withName("n"));
    List<byte[]> malformed =
        List.of(
            new byte[] {0x0A, 0x05, 0x0A}, // item longer than the message
            new byte[] {0x0A, 0x02, 0x0A, 0x05}, // name longer than the item
            new byte[] {0x00}, // tag zero
            new byte[] {0x0C}, // end-group tag at the top
            new byte[] {0x0A, 0x01, 0x0C}, // end-group tag inside an item
            new byte[] {0x0F}, // wire type 7
            wrap(concat(new byte[] {0x0A, 0x02}, new byte[] {(byte) 0xC3, 0x28})), // bad UTF-8
            new byte[] {0x0A, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x0F}, // size < 0
            java.util.Arrays.copyOf(good, good.length - 1));
    for (byte[] bytes : malformed) {
      InvalidProtocolBufferException expected =
          (InvalidProtocolBufferException)
              org.assertj.core.api.Assertions.catchThrowable(() -> GetRateLimitsReq.parseFrom(bytes));
      assertThat(expected).as("protobuf-java refuses %s", ByteString.copyFrom(bytes)).isNotNull();
      assertThatThrownBy(() -> GetRateLimitsCodec.decode(bytes))
          .isInstanceOf(InvalidProtocolBufferException.class)
          .hasMessage(expected.getMessage());
    }
  }

  @Test
  void decode_randomBytes_readOrRefusedAsTheGeneratedParserDoes() throws Exception {
    Random random = new Random(7);
    for (int i = 0; i < 20_000; i++) {
      byte[] bytes = GetRateLimitsReq.newBuilder().addRequests(randomItem(random)).build()
          .toByteArray();
      bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256);
      assertDecodesLikeProtobuf(bytes);
    }
  }

  @Test
  void decode_atMostACallsItems_readsThemAll() throws Exception {
    byte[] common = repeat(EMPTY_ITEM, MAX);
    byte[] withMetadata = concat(wrap(TRACED.toByteArray()), repeat(EMPTY_ITEM, MAX - 1));

    assertThat(GetRateLimitsCodec.decode(common)).hasSize(MAX);
    assertDecodesLikeProtobuf(withMetadata);
  }

  @Test
  void decode_200000CommonItems_readsOnlyUpToTheFirstOneOverACallsItems() throws Exception {
    List<RateLimitRequest> items = GetRateLimitsCodec.decode(repeat(EMPTY_ITEM, 200_000));

    assertThat(items).hasSize(MAX + 1);
  }

  @Test
  void decode_200000ItemsReadByTheGeneratedParser_readsOnlyUpToTheFirstOneOver()
      throws Exception {
    byte[] bytes = concat(wrap(TRACED.toByteArray()), repeat(EMPTY_ITEM, 199_999));

    List<RateLimitRequest> items = GetRateLimitsCodec.decode(bytes);

    assertThat(items).hasSize(MAX + 1);
    assertThat(items.get(0).metadata()).containsExactly(Map.entry("trace", "1"));
  }

  @Test
  void decode_faultAfterTheFirstItemOverACallsItems_notReached() throws Exception {
    byte[] truncated = {0x0A, 0x05, 0x0A};
    byte[] common = concat(repeat(EMPTY_ITEM, MAX + 1), truncated);
    byte[] withMetadata = concat(wrap(TRACED.toByteArray()), repeat(EMPTY_ITEM, MAX), truncated);

    assertThat(GetRateLimitsCodec.decode(common)).hasSize(MAX + 1);
    assertThat(GetRateLimitsCodec.decode(withMetadata)).hasSize(MAX + 1);
  }

  @Test
  void encode_answers_writesTheGeneratedMessagesBytes() {
    Random random = new Random(11);
    for (int i = 0; i < 2_000; i++) {
      List<RateLimitResponse> answers = new ArrayList<>();
      int n = random.nextInt(12);
      for (int j = 0; j < n; j++) {
        answers.add(WireSamples.answer(random));
      }
      assertThat(GetRateLimitsCodec.encode(answers))
          .isEqualTo(ProtoMapping.toProto(answers).toByteArray());
    }
  }

  @Test
  void encode_unpairedSurrogateInError_writesWhatProtobufWrites() {
    List<RateLimitResponse> answers = List.of(RateLimitResponse.error("bad \uD800 key"));

    assertThat(GetRateLimitsCodec.encode(answers))
        .isEqualTo(ProtoMapping.toProto(answers).toByteArray());
  }

  private static void assertDecodesLikeProtobuf(byte[] bytes) throws Exception {
    GetRateLimitsReq expected;
    try {
      expected = GetRateLimitsReq.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {
      assertThatThrownBy(() -> GetRateLimitsCodec.decode(bytes))
          .isInstanceOf(InvalidProtocolBufferException.class)
          .hasMessage(e.getMessage());
      return;
    }
    assertThat(GetRateLimitsCodec.decode(bytes)).isEqualTo(ProtoMapping.toModel(expected));
  }

  private static GetRateLimitsReq randomRequest(Random random) {
    GetRateLimitsReq.Builder request = GetRateLimitsReq.newBuilder();
    int items = random.nextInt(12);
    for (int j = 0; j < items; j++) {
      request.addRequests(randomItem(random));
    }
    return request.build();
  }

  private static RateLimitReq randomItem(Random random) {
    RateLimitReq.Builder item =
        RateLimitReq.newBuilder()
            .setName(random.nextBoolean() ? "requests_per_sec" : "n" + random.nextInt(1000))
            .setUniqueKey(random.nextInt(8) == 0 ? "ключ:ü" : "account:" + random.nextLong())
            .setHits(WireSamples.edge(random))
            .setLimit(WireSamples.edge(random))
            .setDuration(WireSamples.edge(random))
            .setAlgorithmValue(random.nextInt(6) - 1)
            .setBehaviorValue(random.nextInt(64) - (random.nextInt(10) == 0 ? 100 : 0))
            .setBurst(WireSamples.edge(random));
    if (random.nextBoolean()) {
      item.setCreatedAt(WireSamples.edge(random));
    }
    if (random.nextInt(10) == 0) {
      item.putMetadata("k" + random.nextInt(3), "v" + random.nextInt(3));
    }
    return item.build();
  }

  private static byte[] wrap(byte[] item) {
    return bytesField(1, item);
  }

  private static byte[] withName(String name) {
    return bytesField(1, name.getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }

  private static byte[] bytesField(int field, byte[] value) {
    return written(out -> out.writeByteArray(field, value));
  }

  private static byte[] varintField(int field, long value) {
    return written(out -> out.writeInt64(field, value));
  }

  private static byte[] written(FieldWriter writer) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try {
      CodedOutputStream out = CodedOutputStream.newInstance(bytes);
      writer.write(out);
      out.flush();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return bytes.toByteArray();
  }

  /** Writes one field of a hand-built message. */
  private interface FieldWriter {
    void write(CodedOutputStream out) throws IOException;
  }

  private static byte[] repeat(byte[] part, int times) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(part.length * times);
    for (int i = 0; i < times; i++) {
      bytes.writeBytes(part);
    }
    return bytes.toByteArray();
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    for (byte[] part : parts) {
      bytes.writeBytes(part);
    }
    return bytes.toByteArray();
  }
}
