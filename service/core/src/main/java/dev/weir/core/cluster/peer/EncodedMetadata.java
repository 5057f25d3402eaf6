package dev.weir.core.cluster.peer;

import com.google.protobuf.CodedOutputStream;
import dev.weir.core.model.ImmutableMetadata;
import java.io.IOException;
import java.util.AbstractMap;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * A metadata map of fixed entries that keeps each entry's protobuf encoding, so that the answers
 * sharing it (every answer forwarded from one owner carries the same {@code owner}) are written by
 * {@link RateLimitWire} without encoding its strings again. It reads as the map it was made from.
 */
public final class EncodedMetadata extends AbstractMap<String, String>
    implements ImmutableMetadata {

  private static final int ENTRY_KEY_FIELD = 1;
  private static final int ENTRY_VALUE_FIELD = 2;

  private final Map<String, String> entries;
  private final byte[][] encoded;

  private EncodedMetadata(Map<String, String> entries) {
    this.entries = entries;
    this.encoded = new byte[entries.size()][];
    int i = 0;
    for (Map.Entry<String, String> entry : entries.entrySet()) {
      byte[] bytes =
          new byte
              [CodedOutputStream.computeStringSize(ENTRY_KEY_FIELD, entry.getKey())
                  + CodedOutputStream.computeStringSize(ENTRY_VALUE_FIELD, entry.getValue())];
      CodedOutputStream out = CodedOutputStream.newInstance(bytes);
      try {
        out.writeString(ENTRY_KEY_FIELD, entry.getKey());
        out.writeString(ENTRY_VALUE_FIELD, entry.getValue());
        out.checkNoSpaceLeft();
      } catch (IOException e) {
        throw new IllegalStateException("a metadata entry did not fit its computed size", e);
      }
      encoded[i++] = bytes;
    }
  }

  /** Returns the entries of {@code metadata}, in its order, with their encoding. */
  public static EncodedMetadata of(Map<String, String> metadata) {
    return new EncodedMetadata(Collections.unmodifiableMap(new LinkedHashMap<>(metadata)));
  }

  @Override
  public Set<Map.Entry<String, String>> entrySet() {
    return entries.entrySet();
  }

  @Override
  public String get(Object key) {
    return entries.get(key);
  }

  @Override
  public boolean containsKey(Object key) {
    return entries.containsKey(key);
  }

  @Override
  public int size() {
    return entries.size();
  }

  /** Returns the size of these entries as the map field {@code field}. */
  int encodedSize(int field) {
    int size = 0;
    for (byte[] entry : encoded) {
      size += RateLimitWire.nestedSize(field, entry.length);
    }
    return size;
  }

  /** Writes these entries as the map field {@code field}. */
  void writeTo(CodedOutputStream out, int field) throws IOException {
    for (byte[] entry : encoded) {
      RateLimitWire.writeNestedHeader(out, field, entry.length);
      out.writeRawBytes(entry);
    }
  }
}
