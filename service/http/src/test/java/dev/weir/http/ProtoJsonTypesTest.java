package dev.weir.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.DescriptorProtos.UninterpretedOption;
import com.google.protobuf.Descriptors.Descriptor;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.HealthCheckResp;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class ProtoJsonTypesTest {

  private static final Descriptor REQUEST = GetRateLimitsReq.getDescriptor();

  /** A message with uint64, int64, double, bytes, and a repeated message with a bool. */
  private static final Descriptor OPTION = UninterpretedOption.getDescriptor();

  private static final String INT64 =
      "an int64: a whole number from -9223372036854775808 to 9223372036854775807, or one written"
          + " as a string";

  private static Optional<String> item(String fields) {
    return ProtoJsonTypes.refusal("{\"requests\":[{" + fields + "}]}", REQUEST);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"requests\":[{\"name\":\"requests_per_sec\",\"uniqueKey\":\"account:12345\","
            + "\"hits\":\"1\",\"limit\":\"10\",\"duration\":\"1000\"}]}",
        "{\"requests\":[{\"name\":\"n\",\"unique_key\":\"k\",\"hits\":1,\"limit\":10.0,"
            + "\"duration\":1e3,\"burst\":\"-5\",\"createdAt\":456}]}",
        "{\"requests\":[{\"name\":null,\"unique_key\":null,\"hits\":null,\"algorithm\":null,"
            + "\"metadata\":null}],\"unknown\":[1,{\"a\":true}]}",
        "{\"requests\":null}",
        "{\"requests\":[]}",
        "{}",
        "{\"requests\":[{\"algorithm\":\"LEAKY_BUCKET\",\"behavior\":34},"
            + "{\"algorithm\":1,\"behavior\":\"GLOBAL\"},{\"algorithm\":\"LEAKY\"}]}",
        "{\"requests\":[{\"metadata\":{\"traceparent\":\"t\",\"k\":\"\"},\"future\":12}]}",
        "{\"requests\":[{\"hits\":\"9223372036854775807\",\"limit\":-9223372036854775808}]}",
        "[1,2]",
        "  ",
        "{\"requests\":[]} trailing text, as grpc-gateway's decoder ignores it",
      })
  void valid_orLeftToTheParser_noRefusal(String json) {
    assertThat(ProtoJsonTypes.refusal(json, REQUEST)).isEmpty();
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          "unique_key":["a"]       | field 'requests[0].unique_key' is ["a"]; it must be a string
          "unique_key":["a","b"]   | field 'requests[0].unique_key' is ["a","b"]; it must be a string
          "unique_key":12345       | field 'requests[0].unique_key' is 12345; it must be a string
          "uniqueKey":{"a":1}      | field 'requests[0].uniqueKey' is {"a":1}; it must be a string
          "name":true              | field 'requests[0].name' is true; it must be a string
          "metadata":{"k":1}       | field 'requests[0].metadata.k' is 1; it must be a string
          "metadata":{"k":null}    | field 'requests[0].metadata.k' is null; it must be a string
          "metadata":["k"]         | field 'requests[0].metadata' is ["k"]; it must be an object whose values are each a string
          """)
  void wrongTypeForAString_refusedNamingFieldValueAndType(String field, String message) {
    assertThat(item(field)).hasValue(message);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          "unique_key":"a","unique_key":"b"  | field 'requests[0].unique_key' is set twice; it must be set at most once in its object
          "uniqueKey":"a","unique_key":"b"   | field 'requests[0].unique_key' is set twice (first as 'uniqueKey'); it must be set at most once in its object
          "hits":1,"name":"n","hits":null    | field 'requests[0].hits' is set twice; it must be set at most once in its object
          """)
  void fieldSetTwice_refusedNamingTheField(String fields, String message) {
    assertThat(item(fields)).hasValue(message);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          "metadata":{"a":"1","a":"2"}       | field 'requests[0].metadata.a' is set twice; a map key must appear at most once in its object
          "metadata":{"a":"1","b":"2","a":null} | field 'requests[0].metadata.a' is set twice; a map key must appear at most once in its object
          """)
  void mapKeySetTwice_refusedNamingTheKey(String fields, String message) {
    assertThat(item(fields)).hasValue(message);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          {'requests':[{'name':'a'}]}          | malformed JSON: not standard JSON (RFC 8259) at line 1 column 3 path $.
          {requests:[{name:a}]}                | malformed JSON: not standard JSON (RFC 8259) at line 1 column 3 path $.
          {"requests":[{"name":n}]}            | malformed JSON: not standard JSON (RFC 8259) at line 1 column 22 path $.requests[0].name
          {"requests":[{"name":"n"};{}]}       | malformed JSON: not standard JSON (RFC 8259) at line 1 column 27 path $.requests[1]
          {"unknown":x,"requests":[]}          | malformed JSON: not standard JSON (RFC 8259) at line 1 column 12 path $.unknown
          {"requests":[{"unique_key":          | malformed JSON: End of input at line 1 column 28 path $.requests[0].unique_key
          not json                             | malformed JSON: not standard JSON (RFC 8259) at line 1 column 1 path $
          """)
  void notStandardJson_refusedAsMalformedSayingWhere(String json, String message) {
    assertThat(ProtoJsonTypes.refusal(json, REQUEST)).hasValue(message);
  }

  @Test
  void rawControlCharacterInAnyString_refusedAsMalformed() {
    String tab =
        "malformed JSON: Unescaped control characters (\\u0000-\\u001F) are not allowed"
            + " (RFC 8259) at line 1 column ";

    assertThat(ProtoJsonTypes.refusal("{\"unknown\":\"a\tb\",\"requests\":[]}", REQUEST))
        .hasValue(tab + "13 path $.unknown");
    assertThat(ProtoJsonTypes.refusal("{\"unknown\":[{\"x\":\"a\tb\"}]}", REQUEST))
        .hasValue(tab + "19 path $.unknown[0].x");
    assertThat(ProtoJsonTypes.refusal("{\"requests\":[{\"algorithm\":\"a\tb\"}]}", REQUEST))
        .hasValue(tab + "28 path $.requests[0].algorithm");
  }

  @Test
  void requestsSetTwice_refusedInsteadOfTheLastOneWinning() {
    assertThat(ProtoJsonTypes.refusal("{\"requests\":[{}],\"requests\":[]}", REQUEST))
        .hasValue(
            "field 'requests' is set twice; it must be set at most once in its object");
  }

  private static final String PAIRED =
      "; it must be valid UTF-16 text, each surrogate escape paired (\\uD800-\\uDBFF directly"
          + " followed by \\uDC00-\\uDFFF): ";

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          "unique_key":"\\ud800"            | field 'requests[0].unique_key' is "\\ud800" | the \\ud800 at index 0 is unpaired
          "name":"a\\udc00b"                | field 'requests[0].name' is "a\\udc00b" | the \\udc00 at index 1 is unpaired
          "name":"\\ude00\\ud83d"         | field 'requests[0].name' is "\\ude00\\ud83d" | the \\ude00 at index 0 is unpaired
          "metadata":{"k":"\\ud83d"}       | field 'requests[0].metadata.k' is "\\ud83d" | the \\ud83d at index 0 is unpaired
          """)
  void unpairedSurrogate_refusedNamingFieldValueAndPosition(
      String field, String refused, String position) {
    assertThat(item(field)).hasValue(refused + PAIRED + position);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "\"unique_key\":\"\\ud83d\\ude00\"",
        "\"unique_key\":\"\ud83d\ude00\"",
        "\"name\":\"\\u00e9\\uffff\"",
      })
  void pairedSurrogatesAndOtherEscapes_noRefusal(String field) {
    assertThat(item(field)).isEmpty();
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          "hits":true              | field 'requests[0].hits' is true
          "hits":[5]               | field 'requests[0].hits' is [5]
          "hits":"many"            | field 'requests[0].hits' is "many"
          "limit":1.5              | field 'requests[0].limit' is 1.5
          "limit":"1.5"            | field 'requests[0].limit' is "1.5"
          "duration":9223372036854775808 | field 'requests[0].duration' is 9223372036854775808
          "burst":"-9223372036854775809" | field 'requests[0].burst' is "-9223372036854775809"
          "created_at":1e30        | field 'requests[0].created_at' is 1e30
          "hits":1e-999            | field 'requests[0].hits' is 1e-999
          """)
  void notAWholeInt64_refusedNamingFieldValueAndRange(String field, String start) {
    assertThat(item(field)).hasValue(start + "; it must be " + INT64);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          {"requests":{"name":"x"}} | field 'requests' is {"name":"x"}; it must be an array whose elements are each an object (a pb.gubernator.RateLimitReq)
          {"requests":[{},null]}    | field 'requests[1]' is null; it must be an object (a pb.gubernator.RateLimitReq)
          {"requests":[{},"x"]}     | field 'requests[1]' is "x"; it must be an object (a pb.gubernator.RateLimitReq)
          {"requests":[{"algorithm":true}]} | field 'requests[0].algorithm' is true; it must be a pb.gubernator.Algorithm by name (a string) or number: TOKEN_BUCKET (0), LEAKY_BUCKET (1), FIXED_WINDOW (2), SLIDING_WINDOW (3)
          {"requests":[{"behavior":["GLOBAL"]}]} | field 'requests[0].behavior' is ["GLOBAL"]; it must be a pb.gubernator.Behavior by name (a string) or number: BATCHING (0), NO_BATCHING (1), GLOBAL (2), DURATION_IS_GREGORIAN (4), RESET_REMAINING (8), MULTI_REGION (16), DRAIN_OVER_LIMIT (32)
          """)
  void wrongTypeForAMessageListOrEnum_refused(String json, String message) {
    assertThat(ProtoJsonTypes.refusal(json, REQUEST)).hasValue(message);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          {"positiveIntValue":"18446744073709551615","negativeIntValue":-1,"doubleValue":"1.5","stringValue":"YQ==","name":[{"namePart":"a","isExtension":false}]} |
          {"positive_int_value":-1} | field 'positive_int_value' is -1; it must be a uint64: a whole number from 0 to 18446744073709551615, or one written as a string
          {"positiveIntValue":"18446744073709551616"} | field 'positiveIntValue' is "18446744073709551616"; it must be a uint64: a whole number from 0 to 18446744073709551615, or one written as a string
          {"doubleValue":true} | field 'doubleValue' is true; it must be a double: a number, or one written as a string
          {"stringValue":5} | field 'stringValue' is 5; it must be a string (base64)
          {"name":[{"isExtension":"true"}]} | field 'name[0].isExtension' is "true"; it must be true or false
          """)
  void otherScalarTypes(String json, String message) {
    assertThat(ProtoJsonTypes.refusal(json, OPTION))
        .isEqualTo(message == null ? Optional.empty() : Optional.of(message));
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          {"peer_count":2147483647}   |
          {"peer_count":"-2147483648"} |
          {"peerCount":-2147483648.0} |
          {"peer_count":2147483648}   | field 'peer_count' is 2147483648; it must be an int32: a whole number from -2147483648 to 2147483647, or one written as a string
          {"peer_count":"-2147483649"} | field 'peer_count' is "-2147483649"; it must be an int32: a whole number from -2147483648 to 2147483647, or one written as a string
          {"peer_count":"\u0661"}     |
          """)
  void int32Range(String json, String message) {
    assertThat(ProtoJsonTypes.refusal(json, HealthCheckResp.getDescriptor()))
        .isEqualTo(message == null ? Optional.empty() : Optional.of(message));
  }

  @Test
  void longValue_quotedUpTo40Characters() {
    String key = "k".repeat(100);

    assertThat(item("\"hits\":\"" + key + "\""))
        .hasValue("field 'requests[0].hits' is \"" + "k".repeat(39) + "...; it must be " + INT64);
    assertThat(item("\"unique_key\":[\"" + key + "\",\"b\"]"))
        .hasValue("field 'requests[0].unique_key' is [\"" + "k".repeat(38) + "...; it must be a string");
  }
}
