package dev.weir.core.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UnknownFieldSet;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class Utf8RepairTest {

  /** "\xC3" followed by "k": a lead byte without its continuation byte. */
  private static final byte[] NOT_UTF8 = {(byte) 0xC3, 'k'};

  @Test
  void repair_stringsNestedInMessagesAndMaps_eachMalformedSequenceBecomesReplacement()
      throws Exception {
    byte[] item =
        concat(
            field(1, "name".getBytes(StandardCharsets.UTF_8)),
            field(2, NOT_UTF8),
            varint(3, 7),
            field(9, concat(field(1, NOT_UTF8), field(2, new byte[] {'v', (byte) 0xFF}))));
    byte[] message = field(1, item);
    assertThatThrownBy(() -> GetRateLimitsReq.parseFrom(message))
        .satisfies(e -> assertThat(Utf8Repair.isInvalidUtf8(e)).isTrue());

    GetRateLimitsReq repaired =
        GetRateLimitsReq.parseFrom(Utf8Repair.repair(GetRateLimitsReq.getDescriptor(), message));

    RateLimitReq r = repaired.getRequests(0);
    assertThat(r.getName()).isEqualTo("name");
    assertThat(r.getUniqueKey()).isEqualTo("\uFFFDk");
    assertThat(r.getHits()).isEqualTo(7);
    assertThat(r.getMetadataMap()).containsExactly(java.util.Map.entry("\uFFFDk", "v\uFFFD"));
  }

  @Test
  void repair_validMessageWithUnknownFields_bytesUnchanged() throws Exception {
    byte[] message =
        GetRateLimitsReq.newBuilder()
            .addRequests(RateLimitReq.newBuilder().setName("n").setUniqueKey("ключ").setHits(3))
            .setUnknownFields(
                UnknownFieldSet.newBuilder()
                    .addField(
                        99,
                        UnknownFieldSet.Field.newBuilder()
                            .addLengthDelimited(ByteString.copyFrom(NOT_UTF8))
                            .addVarint(5)
                            .build())
                    .build())
            .build()
            .toByteArray();

    assertThat(Utf8Repair.repair(GetRateLimitsReq.getDescriptor(), message)).isEqualTo(message);
  }

  @Test
  void repair_truncatedMessage_refused() {
    byte[] truncated = {0x0a, 0x7f, 'x'};

    assertThatThrownBy(() -> Utf8Repair.repair(GetRateLimitsReq.getDescriptor(), truncated))
        .isInstanceOf(InvalidProtocolBufferException.class);
  }

  @Test
  void isInvalidUtf8_otherParseFailure_false() {
    assertThatThrownBy(() -> GetRateLimitsReq.parseFrom(new byte[] {0x0a, 0x7f, 'x'}))
        .satisfies(e -> assertThat(Utf8Repair.isInvalidUtf8(e)).isFalse());
  }

  private static byte[] field(int number, byte[] value) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    out.writeByteArray(number, value);
    out.flush();
    return bytes.toByteArray();
  }

  private static byte[] varint(int number, long value) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    out.writeInt64(number, value);
    out.flush();
    return bytes.toByteArray();
  }

  private static byte[] concat(byte[]... parts) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] part : parts) {
      out.write(part);
    }
    return out.toByteArray();
  }
}
