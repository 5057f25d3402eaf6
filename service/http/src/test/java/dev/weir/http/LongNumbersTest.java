package dev.weir.http;

import static com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Label.LABEL_OPTIONAL;
import static com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Label.LABEL_REPEATED;
import static com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Type.TYPE_BOOL;
import static com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Type.TYPE_DOUBLE;
import static com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Type.TYPE_FLOAT;
import static com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Type.TYPE_INT32;
import static com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Type.TYPE_INT64;
import static com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Type.TYPE_MESSAGE;
import static com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Type.TYPE_STRING;
import static com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Type.TYPE_UINT64;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.MessageOptions;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.DescriptorValidationException;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.StructProto;
import com.google.protobuf.WrappersProto;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LongNumbersTest {

  private static final String LONG = "1".repeat(LongNumbers.MAX_CHARS + 1);

  private static final Descriptor REQUEST = GetRateLimitsReq.getDescriptor();

  /** A message with a field of each shape: {@code t.Shapes}. */
  private static final Descriptor SHAPES = shapes();

  private static Optional<String> item(String fields) {
    return LongNumbers.refusal("{\"requests\":[{" + fields + "}]}", REQUEST);
  }

  private static Optional<String> shapes(String fields) {
    return LongNumbers.refusal("{" + fields + "}", SHAPES);
  }

  @Test
  void bareNumberOverTheLimit_refusedNamingWhereAndHowLong() {
    assertThat(item("\"hits\":" + LONG))
        .contains(
            "the number at $.requests[0].hits has 1001 characters; numbers have at most 1000");
  }

  @Test
  void numberWrittenAsAStringOrWithEscapes_overTheLimit_refused() {
    assertThat(item("\"hits\":\"" + LONG + "\"")).isPresent();
    assertThat(item("\"hits\":\"0." + "0".repeat(2000) + "1\"")).isPresent();
    assertThat(item("\"hits\":\"" + "\\u0031".repeat(1001) + "\"")).isPresent();
  }

  @Test
  void stringOfUnicodeDigitsOverTheLimit_refusedAsBigDecimalReadsThemToo() {
    assertThat(item("\"hits\":\"" + "1".repeat(1000) + "\u0661\"")).isPresent();
    assertThat(item("\"hits\":\"" + "\uff11".repeat(1001) + "\"")).isPresent();
  }

  @Test
  void lenientSyntaxTheParserAccepts_readAsItReadsIt() {
    assertThat(item("/*\"*/\"hits\":" + LONG)).isPresent();
    assertThat(item("'hits':'" + LONG + "'")).isPresent();
    assertThat(LongNumbers.refusal("{requests:[{hits:" + LONG + "}]}", REQUEST)).isPresent();
  }

  @Test
  void exponentBeyondTheLimit_refused_withinIt_accepted() {
    assertThat(item("\"duration\":1e99999999"))
        .contains(
            "the number at $.requests[0].duration has the exponent 99999999; numbers have"
                + " exponents up to 1000 either way");
    assertThat(item("\"hits\":\"1E-1001\"")).isPresent();
    assertThat(item("\"hits\":1e3,\"limit\":2.5E+1000")).isEmpty();
  }

  @Test
  void enumAndFloatingPointValues_checked() {
    assertThat(item("\"algorithm\":\"1e99999\"")).contains(
        "the number at $.requests[0].algorithm has the exponent 99999; numbers have exponents up"
            + " to 1000 either way");
    assertThat(shapes("\"d\":" + LONG)).isPresent();
    assertThat(shapes("\"f\":\"1E-5000\"")).isPresent();
  }

  @Test
  void numbersAtTheLimit_longTextStrings_andMalformedJson_accepted() {
    String atLimit = "1".repeat(LongNumbers.MAX_CHARS);
    assertThat(item("\"hits\":" + atLimit + ",\"limit\":\"" + atLimit + "\"")).isEmpty();
    assertThat(item("\"uniqueKey\":\"user-" + LONG + "\"")).isEmpty();
    assertThat(item("\"uniqueKey\":\"" + LONG + "\"")).isEmpty();
    assertThat(item("\"uniqueKey\":\"\\n" + LONG + "\"")).isEmpty();
    assertThat(LongNumbers.refusal("{\"requests\":[{\"name\":", REQUEST)).isEmpty();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "\"unique_key\":\"E1234\"",
        "\"uniqueKey\":\"1e99999999\"",
        "\"unique_key\":[\"1e99999999\"]",
        "\"metadata\":{\"1e99999\":\"1e99999\"}",
        "\"future_field\":1e99999999",
      })
  void valuesOfStringFieldsAndUndeclaredFields_notReadAsNumbers_accepted(String fields) {
    assertThat(item(fields)).isEmpty();
  }

  @Test
  void valuesOfStringAndBoolFields_accepted_inAnyShape() {
    assertThat(shapes("\"s\":1e99999,\"b\":\"1e99999\",\"names\":[\"1e99999\"]")).isEmpty();
  }

  @Test
  void numericMapKeysAndValues_wrappers_repeatedNumbers_checked() {
    assertThat(shapes("\"by_id\":{\"1e99999\":\"x\"}"))
        .contains(
            "the number at $.by_id.1e99999 has the exponent 99999; numbers have exponents up to"
                + " 1000 either way");
    assertThat(shapes("\"counts\":{\"k\":\"1e99999\"}")).contains(
        "the number at $.counts.k has the exponent 99999; numbers have exponents up to 1000 either"
            + " way");
    assertThat(shapes("\"wrapped\":\"1e99999\"")).isPresent();
    assertThat(shapes("\"wrapped_name\":\"1e99999\"")).isEmpty();
    assertThat(shapes("\"ids\":[1,\"1e99999\"]")).isPresent();
    assertThat(shapes("\"child\":{\"child\":{\"d\":1e99999}}")).isPresent();
    assertThat(shapes("\"child\":{\"s\":\"1e99999\"}")).isEmpty();
  }

  @Test
  void shapesTheFieldDoesNotTake_andWellKnownTypes_checkedThroughout() {
    assertThat(shapes("\"i\":[\"1e99999\"]")).isPresent();
    assertThat(shapes("\"child\":[{\"s\":\"1e99999\"}]")).isPresent();
    assertThat(shapes("\"names\":{\"a\":\"1e99999\"}")).isPresent();
    assertThat(shapes("\"anything\":{\"k\":{\"n\":1e99999}}")).isPresent();
    assertThat(LongNumbers.refusal("[\"1e99999\"]", SHAPES)).isPresent();
  }

  @Test
  void manyValuesUnderALongName_readInOnePass() {
    String body =
        "{\"requests\":[{\"" + "n".repeat(1 << 20) + "\":[" + "1,".repeat(300_000) + "1],"
            + "\"hits\":" + "1,\"hits\":".repeat(300_000) + "1}]}";

    // Building each value's path copied the 1 MiB name 300 000 times (minutes of copying).
    var refusal =
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
            java.time.Duration.ofSeconds(30), () -> LongNumbers.refusal(body, REQUEST));

    assertThat(refusal).isEmpty();
  }

  private static Descriptor shapes() {
    DescriptorProto byId =
        DescriptorProto.newBuilder()
            .setName("ByIdEntry")
            .setOptions(MessageOptions.newBuilder().setMapEntry(true))
            .addField(field("key", 1, TYPE_INT32, LABEL_OPTIONAL, null))
            .addField(field("value", 2, TYPE_STRING, LABEL_OPTIONAL, null))
            .build();
    DescriptorProto counts =
        DescriptorProto.newBuilder()
            .setName("CountsEntry")
            .setOptions(MessageOptions.newBuilder().setMapEntry(true))
            .addField(field("key", 1, TYPE_STRING, LABEL_OPTIONAL, null))
            .addField(field("value", 2, TYPE_INT64, LABEL_OPTIONAL, null))
            .build();
    DescriptorProto shapes =
        DescriptorProto.newBuilder()
            .setName("Shapes")
            .addNestedType(byId)
            .addNestedType(counts)
            .addField(field("i", 1, TYPE_INT64, LABEL_OPTIONAL, null))
            .addField(field("d", 2, TYPE_DOUBLE, LABEL_OPTIONAL, null))
            .addField(field("f", 3, TYPE_FLOAT, LABEL_OPTIONAL, null))
            .addField(field("s", 4, TYPE_STRING, LABEL_OPTIONAL, null))
            .addField(field("b", 5, TYPE_BOOL, LABEL_OPTIONAL, null))
            .addField(field("names", 6, TYPE_STRING, LABEL_REPEATED, null))
            .addField(field("ids", 7, TYPE_UINT64, LABEL_REPEATED, null))
            .addField(field("by_id", 8, TYPE_MESSAGE, LABEL_REPEATED, ".t.Shapes.ByIdEntry"))
            .addField(field("counts", 9, TYPE_MESSAGE, LABEL_REPEATED, ".t.Shapes.CountsEntry"))
            .addField(
                field("wrapped", 10, TYPE_MESSAGE, LABEL_OPTIONAL, ".google.protobuf.UInt64Value"))
            .addField(
                field(
                    "wrapped_name",
                    11,
                    TYPE_MESSAGE,
                    LABEL_OPTIONAL,
                    ".google.protobuf.StringValue"))
            .addField(field("child", 12, TYPE_MESSAGE, LABEL_OPTIONAL, ".t.Shapes"))
            .addField(
                field("anything", 13, TYPE_MESSAGE, LABEL_OPTIONAL, ".google.protobuf.Struct"))
            .build();
    FileDescriptorProto file =
        FileDescriptorProto.newBuilder()
            .setName("t/shapes.proto")
            .setPackage("t")
            .setSyntax("proto3")
            .addDependency(WrappersProto.getDescriptor().getName())
            .addDependency(StructProto.getDescriptor().getName())
            .addMessageType(shapes)
            .build();
    try {
      return FileDescriptor.buildFrom(
              file,
              new FileDescriptor[] {WrappersProto.getDescriptor(), StructProto.getDescriptor()})
          .findMessageTypeByName("Shapes");
    } catch (DescriptorValidationException e) {
      throw new IllegalStateException(e);
    }
  }

  private static FieldDescriptorProto field(
      String name,
      int number,
      FieldDescriptorProto.Type type,
      FieldDescriptorProto.Label label,
      String typeName) {
    FieldDescriptorProto.Builder field =
        FieldDescriptorProto.newBuilder()
            .setName(name)
            .setNumber(number)
            .setType(type)
            .setLabel(label)
            .setJsonName(name);
    if (typeName != null) {
      field.setTypeName(typeName);
    }
    return field.build();
  }
}
