package dev.weir.core.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.KnownLength;
import java.io.ByteArrayInputStream;
import org.junit.jupiter.api.Test;

/** {@link MessageBytes#readAll} against streams that report their length wrongly or not at all. */
class MessageBytesTest {

  private static final byte[] BYTES = {10, 3, 10, 1, 110};

  @Test
  void readAll_lengthUnderReported_readsEveryByte() throws Exception {
    assertThat(MessageBytes.readAll(new Reporting(BYTES, 2))).containsExactly(BYTES);
  }

  @Test
  void readAll_lengthOverReported_readsWhatThereIs() throws Exception {
    assertThat(MessageBytes.readAll(new Reporting(BYTES, 9))).containsExactly(BYTES);
  }

  @Test
  void readAll_unknownLength_readsEveryByte() throws Exception {
    assertThat(MessageBytes.readAll(new ByteArrayInputStream(BYTES))).containsExactly(BYTES);
  }

  /** A stream whose first {@code available()} reports {@code reported} bytes. */
  private static final class Reporting extends ByteArrayInputStream implements KnownLength {
    private final int reported;
    private boolean asked;

    Reporting(byte[] bytes, int reported) {
      super(bytes);
      this.reported = reported;
    }

    @Override
    public synchronized int available() {
      if (asked) {
        return super.available();
      }
      asked = true;
      return reported;
    }
  }
}
