package dev.weir.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonSyntaxException;
import com.google.gson.stream.MalformedJsonException;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.gson.JsonParser;
import com.google.gson.stream.JsonReader;
import java.io.StringReader;
import org.junit.jupiter.api.Test;

class ParserMessagesTest {

  /** Returns the refusal protobuf-java's JsonFormat makes of Gson's, chained by initCause. */
  private static InvalidProtocolBufferException parsing(String json) {
    try {
      JsonParser.parseReader(new JsonReader(new StringReader(json)));
    } catch (RuntimeException e) {
      InvalidProtocolBufferException refusal = new InvalidProtocolBufferException(e.getMessage());
      refusal.initCause(e);
      return refusal;
    }
    throw new AssertionError("parsed: " + json);
  }

  @Test
  void syntaxErrorOfTheParser_malformedJsonSayingWhereWithoutExceptionNameOrLink() {
    assertThat(ParserMessages.of(parsing("{\"requests\":[{\"name\":\"n\",}]}")))
        .isEqualTo("malformed JSON: Expected name at line 1 column 27 path $.requests[0].name");
    assertThat(ParserMessages.of(parsing("{\"requests\":[{\"name\":")))
        .isEqualTo("malformed JSON: End of input at line 1 column 22 path $.requests[0].name");
  }

  @Test
  void otherRefusalNamingAJavaException_keptAsItIsNotCalledMalformed() {
    InvalidProtocolBufferException wrapped =
        new InvalidProtocolBufferException(
            "java.lang.NumberFormatException: For input string: \"x\"");

    assertThat(ParserMessages.of(wrapped))
        .isEqualTo("java.lang.NumberFormatException: For input string: \"x\"");
  }

  @Test
  void malformedJsonDeeperInTheChain_found() {
    Throwable chained =
        new InvalidProtocolBufferException("x")
            .initCause(new JsonSyntaxException(new MalformedJsonException("Unterminated string")));

    assertThat(ParserMessages.of(chained)).isEqualTo("malformed JSON: Unterminated string");
  }

  @Test
  void noRefusalOrNoMessage_saysTheBodyIsNotAValidRequest() {
    assertThat(ParserMessages.of(null)).isEqualTo("the body is not a valid request");
    assertThat(ParserMessages.of(new IllegalStateException()))
        .isEqualTo("the body is not a valid request");
  }
}
