package dev.weir.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonSyntaxException;
import com.google.gson.Strictness;
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
      JsonReader reader = new JsonReader(new StringReader(json));
      reader.setStrictness(Strictness.STRICT);
      JsonParser.parseReader(reader);
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
  void otherRefusalNamingAJavaException_exceptionNameCutNotCalledMalformed() {
    InvalidProtocolBufferException wrapped =
        new InvalidProtocolBufferException(
            "java.lang.NumberFormatException: For input string: \"x\"");

    assertThat(ParserMessages.of(wrapped)).isEqualTo("For input string: \"x\"");
  }

  @Test
  void strictModeMessages_sayRfc8259WithoutGsonAdvice() {
    assertThat(ParserMessages.of(parsing("{\"a\":\"x\ty\"}")))
        .isEqualTo(
            "malformed JSON: Unescaped control characters (\\u0000-\\u001F) are not allowed"
                + " (RFC 8259) at line 1 column 7 path $.a");
    assertThat(ParserMessages.of(parsing("{\"a\":\"\\'\"}")))
        .isEqualTo(
            "malformed JSON: Invalid escaped character \"'\" (RFC 8259) at line 1 column 9"
                + " path $.a");
  }

  @Test
  void causeCycleLongerThanOne_ends() {
    IllegalStateException a = new IllegalStateException("a");
    IllegalStateException b = new IllegalStateException("b", a);
    a.initCause(b);

    assertThat(ParserMessages.of(a)).isEqualTo("a");
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
