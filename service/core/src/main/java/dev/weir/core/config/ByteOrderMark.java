package dev.weir.core.config;

/** The UTF-8 byte order mark, {@code EF BB BF}, that some editors write at the start of a file. */
public final class ByteOrderMark {

  private static final byte[] UTF8 = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};

  private ByteOrderMark() {}

  /** Returns the length of the UTF-8 byte order mark {@code bytes} start with: 3, or 0 without. */
  public static int length(byte[] bytes) {
    if (bytes.length < UTF8.length) {
      return 0;
    }
    for (int i = 0; i < UTF8.length; i++) {
      if (bytes[i] != UTF8[i]) {
        return 0;
      }
    }
    return UTF8.length;
  }
}
