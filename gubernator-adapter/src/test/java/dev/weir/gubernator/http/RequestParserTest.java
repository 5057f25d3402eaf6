package dev.weir.gubernator.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.limiter.RequestTooLargeException;
import java.util.Collections;
import org.junit.jupiter.api.Test;

class RequestParserTest {

  private static final int MAX = RateLimitService.MAX_BATCH_SIZE;

  private static String items(int count, String item) {
    return "[" + String.join(",", Collections.nCopies(count, item)) + "]";
  }

  @Test
  void parse_atMostACallsItems_readsThemAll() throws Exception {
    assertThat(RequestParser.parse("{\"requests\":" + items(MAX, "{}") + "}").getRequestsCount())
        .isEqualTo(MAX);
    assertThat(
            RequestParser.parse(
                    "{\"other\":" + items(2 * MAX, "{}") + ",\"requests\":" + items(2, "{}") + "}")
                .getRequestsCount())
        .isEqualTo(2);
    assertThat(
            RequestParser.parse(
                    "{\"requests\":[{\"name\":\"n\",\"requests\":" + items(2 * MAX, "{}") + "}]}")
                .getRequestsCount())
        .isEqualTo(1);
  }

  @Test
  void parse_200000Items_refusedAsTooManyWithoutParsingThem() {
    assertTooMany("{\"requests\":" + items(200_000, "{}") + "}");
  }

  @Test
  void parse_tooManyItemsWithAFault_refusedForTheFaultAsGubernatorsGatewayDoes() {
    String wrongType = "{\"requests\":" + items(MAX + 1, "{\"hits\":\"many\"}") + "}";
    String twice = "{\"requests\":" + items(MAX + 1, "{}") + ",\"requests\":[]}";
    String lenient = "{requests:" + items(MAX + 1, "{}").replace(',', ';') + "}";
    String cut = "{\"requests\":" + items(MAX + 1, "{}") + ",";

    assertThatThrownBy(() -> RequestParser.parse(wrongType))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessageContaining("requests[0].hits");
    assertThatThrownBy(() -> RequestParser.parse(twice))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessageContaining("requests");
    assertThatThrownBy(() -> RequestParser.parse(lenient))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessageStartingWith("malformed JSON: not standard JSON (RFC 8259)");
    assertThatThrownBy(() -> RequestParser.parse(cut))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessageStartingWith("malformed JSON: End of input");
  }

  @Test
  void parse_tooManyItemsWithAnUnknownEnumName_refusedAsTooManyAsGubernatorsGatewayReadsItAs0() {
    assertTooMany("{\"requests\":" + items(MAX + 1, "{\"algorithm\":\"BOGUS\"}") + "}");
  }

  @Test
  void parse_tooManyItemsWithAnEnumNumberNoEnumTakes_refusedForItAsGubernatorsGatewayDoes() {
    String json = "{\"requests\":" + items(MAX + 1, "{\"behavior\":4.5}") + "}";

    assertThatThrownBy(() -> RequestParser.parse(json))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessageStartingWith("field 'requests[0].behavior' has no value 4.5");
  }

  @Test
  void parse_tooManyItems_anUnknownEnumNameBeforeAnEnumNumberNoEnumTakes_refusedForTheNumber() {
    String json =
        "{\"requests\":[{\"algorithm\":\"BOGUS\"},"
            + items(MAX, "{\"behavior\":4.5}").substring(1)
            + "}";

    assertThatThrownBy(() -> RequestParser.parse(json))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessageStartingWith("field 'requests[1].behavior' has no value 4.5");
  }

  @Test
  void parse_malformedJson_messageSaysWhereWithoutJavaExceptionNamesOrGsonLinks() {
    assertThatThrownBy(() -> RequestParser.parse("{\"requests\":[{\"name\":\"n\",}]}"))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessage("malformed JSON: Expected name at line 1 column 27 path $.requests[0].name");
    assertThatThrownBy(() -> RequestParser.parse("{\"requests\":[{\"name\":"))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessage("malformed JSON: End of input at line 1 column 22 path $.requests[0].name");
  }

  @Test
  void parse_jsonOnlyALenientReaderTakes_malformedSayingWhere() {
    assertThatThrownBy(() -> RequestParser.parse("{'requests':[{name:'a'}]}"))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessage("malformed JSON: not standard JSON (RFC 8259) at line 1 column 3 path $.");
    assertThatThrownBy(() -> RequestParser.parse("{\"requests\":[{\"name\":n}]}"))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessage(
            "malformed JSON: not standard JSON (RFC 8259) at line 1 column 22 path"
                + " $.requests[0].name");
  }

  @Test
  void parse_textAfterTheBody_ignoredAsByGrpcGateway() throws Exception {
    String body = "{\"requests\":[{\"name\":\"n\"}]} tail";

    assertThat(RequestParser.parse(body).getRequests(0).getName()).isEqualTo("n");
  }

  @Test
  void parse_wellFormedJsonOfTheWrongShape_keepsTheParsersMessage() {
    assertThatThrownBy(() -> RequestParser.parse("[]"))
        .isInstanceOf(InvalidProtocolBufferException.class)
        .hasMessage("Expect message object but got: []")
        .hasCauseInstanceOf(InvalidProtocolBufferException.class)
        .cause()
        .hasMessage("Expect message object but got: []");
  }

  private static void assertTooMany(String json) {
    assertThatThrownBy(() -> RequestParser.parse(json))
        .isInstanceOf(RequestTooLargeException.class)
        .hasMessage(RequestTooLargeException.OVER_BATCH_SIZE_MESSAGE);
  }
}
