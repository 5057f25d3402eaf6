package dev.weir.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonParser;
import dev.weir.proto.gubernator.Algorithm;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class EnumValuesTest {

  private static Optional<EnumValues.Dropped> firstDropped(String json) {
    return EnumValues.firstDropped(
        JsonParser.parseString(json).getAsJsonObject(), GetRateLimitsReq.getDescriptor());
  }

  @Test
  void nameTheEnumLacks_droppedWithPathValueAndEveryValue() {
    Optional<EnumValues.Dropped> dropped =
        firstDropped("{\"requests\":[{\"name\":\"a\"},{\"algorithm\":\"LEAKY\"}]}");

    assertThat(dropped.map(EnumValues.Dropped::message))
        .hasValue(
            "field 'requests[1].algorithm' has no value named 'LEAKY'; pb.gubernator.Algorithm"
                + " allows one of TOKEN_BUCKET (0), LEAKY_BUCKET (1), FIXED_WINDOW (2),"
                + " SLIDING_WINDOW (3), by name or number");
  }

  @Test
  void message_listsOnlyTheValuesAllowed() {
    Optional<EnumValues.Dropped> dropped = firstDropped("{\"requests\":[{\"algorithm\":\"x\"}]}");

    assertThat(dropped.map(d -> d.message(v -> v.getNumber() != Algorithm.TOKEN_BUCKET_VALUE)))
        .hasValue(
            "field 'requests[0].algorithm' has no value named 'x'; pb.gubernator.Algorithm"
                + " allows one of LEAKY_BUCKET (1), FIXED_WINDOW (2), SLIDING_WINDOW (3), by name"
                + " or number");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"requests\":[{\"algorithm\":\"LEAKY_BUCKET\",\"behavior\":34}]}",
        "{\"requests\":[{\"algorithm\":\"1\",\"behavior\":\"3.4e1\"}]}",
        "{\"requests\":[{\"algorithm\":99}]}",
        "{\"unknown\":{\"algorithm\":\"LEAKY\"},\"requests\":[{\"other\":\"x\"}]}"
      })
  void nameNumberOrUnknownField_notDropped(String json) {
    assertThat(firstDropped(json)).isEmpty();
  }
}
