package dev.weir.core.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import org.junit.jupiter.api.Test;

class EncodedMessageTest {

  @Test
  void drainTo_afterARead_writesTheRestAndReportsItsLength() throws Exception {
    EncodedMessage message = new EncodedMessage(new byte[] {1, 2, 3, 4});
    ByteArrayOutputStream target = new ByteArrayOutputStream();

    assertThat(message.read()).isEqualTo(1);
    assertThat(message.available()).isEqualTo(3);
    assertThat(message.drainTo(target)).isEqualTo(3);

    assertThat(target.toByteArray()).containsExactly(2, 3, 4);
    assertThat(message.available()).isZero();
    assertThat(message.read()).isEqualTo(-1);
  }

  @Test
  void read_intoArray_readsUpToWhatIsLeftThenEndOfStream() {
    EncodedMessage message = new EncodedMessage(new byte[] {(byte) 0xFF, 7, 8});
    byte[] target = new byte[5];

    assertThat(message.read(target, 1, 2)).isEqualTo(2);
    assertThat(message.read(target, 3, 2)).isEqualTo(1);
    assertThat(message.read(target, 0, 0)).isZero();
    assertThat(message.read(target, 0, 5)).isEqualTo(-1);

    assertThat(target).containsExactly(0, (byte) 0xFF, 7, 8, 0);
  }
}
