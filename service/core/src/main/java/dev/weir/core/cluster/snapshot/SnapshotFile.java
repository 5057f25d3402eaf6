package dev.weir.core.cluster.snapshot;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.SaturatingMath;
import dev.weir.core.limiter.InputLimits;
import dev.weir.proto.gubernator.BucketSnapshot;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.zip.CRC32C;

/**
 * The on-disk format of one node's bucket snapshot: a fixed header, then the buckets as
 * length-delimited {@code BucketSnapshot} messages of the peer protocol (the records {@code
 * TransferBuckets} carries), so one format serves hand-off and snapshots.
 *
 * <p>Header, big-endian: the magic {@code WEIRSNAP} (8 bytes), the format {@link #VERSION} (int32),
 * the writer's advertised address (uint16 length, then at most {@link
 * PeerInputValidator#MAX_ADDRESS_LENGTH} UTF-8 bytes), the wall-clock time written (int64 epoch
 * milliseconds), the bucket count (int32), the body's length in bytes (int64) and the CRC32C of the
 * body (int32). Each record is a varint length (at most {@link #MAX_RECORD_BYTES}) and the message.
 *
 * <p>{@link #read} trusts nothing in the file: it checks the header, that the file is exactly as
 * long as the header says, every record's length, the checksum, the count and every bucket (with
 * {@link PeerInputValidator#checkSnapshot}, the checks of a hand-off), before it passes on any
 * bucket; memory stays bounded by one record whatever the lengths claim.
 */
public final class SnapshotFile {

  /** The first 8 bytes of every snapshot file. */
  static final byte[] MAGIC = "WEIRSNAP".getBytes(StandardCharsets.US_ASCII);

  /** The size in bytes of the buffer through which a file is written, scanned and read. */
  static final int BUFFER_BYTES = 1 << 16;

  /** The format version this node writes and reads. */
  public static final int VERSION = 1;

  /**
   * The longest record a reader accepts: room for the longest key the input limits can ever allow
   * ({@link InputLimits#LONGEST_NAME_OR_KEY} twice, joined by {@code _}, so a node set to the
   * largest {@code WEIR_MAX_NAME_LENGTH} and {@code WEIR_MAX_KEY_LENGTH} reads back what it wrote)
   * and 1 KiB for the field tags and a bucket's state (at most seven varints).
   */
  public static final int MAX_RECORD_BYTES = 2 * InputLimits.LONGEST_NAME_OR_KEY + 1 + 1024;

  /** The most buckets one file may declare. */
  public static final int MAX_BUCKETS = 100_000_000;

  /** The header's length after the writer's address. */
  private static final int TAIL_BYTES = 8 + 4 + 8 + 4;

  private SnapshotFile() {}

  /** Where a writer gets the buckets it writes: it calls the sink once per bucket. */
  @FunctionalInterface
  public interface Buckets {
    /** Passes every bucket to write to {@code sink}. */
    void forEach(Consumer<BucketSnapshot> sink);
  }

  /** The header of a snapshot file that passed every check. */
  public record Header(String writer, long writtenAt, int buckets) {}

  /** Why a snapshot file cannot be used; its message says what is wrong. */
  public static final class Invalid extends Exception {
    private static final long serialVersionUID = 1L;

    Invalid(String message) {
      super(message);
    }
  }

  /**
   * Writes {@code buckets} to {@code file} (replaced when it exists) as written by {@code writer}
   * at epoch millisecond {@code writtenAt}, forcing the contents to disk before it returns. Returns
   * how many buckets it wrote. The file is created anew, readable and writable by its owner only
   * ({@code 0600}) on a file system with POSIX permissions: it holds every bucket's key, which may
   * carry client addresses, user ids or API keys.
   */
  public static int write(Path file, String writer, long writtenAt, Buckets buckets)
      throws IOException {
    byte[] address = writer.getBytes(StandardCharsets.UTF_8);
    if (address.length > PeerInputValidator.MAX_ADDRESS_LENGTH) {
      throw new IllegalArgumentException("writer address too long: " + writer);
    }
    int headerBytes = MAGIC.length + 4 + 2 + address.length + TAIL_BYTES;
    Files.deleteIfExists(file);
    try (FileChannel channel =
        FileChannel.open(
            file,
            EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
            ownerOnly(file))) {
      channel.position(headerBytes);
      CRC32C crc = new CRC32C();
      long[] body = new long[1];
      int[] count = new int[1];
      OutputStream out =
          new BufferedOutputStream(Channels.newOutputStream(channel), BUFFER_BYTES) {
            @Override
            public synchronized void write(byte[] b, int off, int len) throws IOException {
              crc.update(b, off, len);
              body[0] += len;
              super.write(b, off, len);
            }

            @Override
            public synchronized void write(int b) throws IOException {
              crc.update(b);
              body[0]++;
              super.write(b);
            }
          };
      try {
        buckets.forEach(
            b -> {
              try {
                b.writeDelimitedTo(out);
                count[0]++;
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            });
      } catch (UncheckedIOException e) {
        throw e.getCause();
      }
      out.flush();
      ByteBuffer header = ByteBuffer.allocate(headerBytes);
      header
          .put(MAGIC)
          .putInt(VERSION)
          .putShort((short) address.length)
          .put(address)
          .putLong(writtenAt)
          .putInt(count[0])
          .putLong(body[0])
          .putInt((int) crc.getValue());
      header.flip();
      channel.position(0);
      while (header.hasRemaining()) {
        channel.write(header);
      }
      channel.force(true);
      return count[0];
    }
  }

  private static FileAttribute<?>[] ownerOnly(Path file) {
    if (!file.getFileSystem().supportedFileAttributeViews().contains("posix")) {
      return new FileAttribute<?>[0];
    }
    return new FileAttribute<?>[] {
      PosixFilePermissions.asFileAttribute(
          EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE))
    };
  }

  /**
   * Checks {@code file} as a whole, then passes each of its buckets to {@code sink}; nothing is
   * passed on unless every check passed. Buckets are checked with {@code validator} at epoch
   * millisecond {@code now}; the time written may lie at most {@link
   * PeerInputValidator#MAX_CLOCK_SKEW} ahead of {@code now}.
   *
   * @throws Invalid naming what is wrong with the file
   * @throws IOException when the file cannot be read
   */
  public static Header read(
      Path file, PeerInputValidator validator, long now, Consumer<BucketSnapshot> sink)
      throws IOException, Invalid {
    Header header = scan(file, validator, now, b -> {});
    scan(file, validator, now, sink);
    return header;
  }

  /**
   * Returns the header of {@code file} after checking it alone (the buckets are not read), as
   * {@link #read} checks it at epoch millisecond {@code now}.
   *
   * @throws Invalid naming what is wrong with the header
   * @throws IOException when the file cannot be read
   */
  public static Header readHeader(Path file, PeerInputValidator validator, long now)
      throws IOException, Invalid {
    try (DataInputStream in = new DataInputStream(Files.newInputStream(file))) {
      return header(in, validator, now);
    } catch (EOFException e) {
      throw new Invalid("the file ends early (truncated)");
    }
  }

  /**
   * Returns how many buckets of {@code file} are live at epoch millisecond {@code now} (their state
   * expires after it), counting no further than {@code atMost + 1}: it checks the header as {@link
   * #read} does, then reads the records in order, each parsed for its expiry, until that count is
   * reached or the body ends. The body's own checks (lengths, checksum, every bucket) are left to
   * {@link #read}; a record that cannot be parsed fails this too.
   *
   * @throws Invalid naming what is wrong with the header or a record
   * @throws IOException when the file cannot be read
   */
  public static long liveBuckets(Path file, PeerInputValidator validator, long now, long atMost)
      throws IOException, Invalid {
    try (DataInputStream in =
        new DataInputStream(new BufferedInputStream(Files.newInputStream(file), BUFFER_BYTES))) {
      header(in, validator, now);
      Records records = new Records(in, in.readLong());
      in.readInt();
      long live = 0;
      while (records.hasNext() && live <= atMost) {
        Optional<BucketState> state = PeerProtos.fromSnapshot(records.next());
        if (state.isPresent() && state.get().expireAt() > now) {
          live++;
        }
      }
      return live;
    } catch (EOFException e) {
      throw new Invalid("the file ends early (truncated)");
    }
  }

  private static Header scan(
      Path file, PeerInputValidator validator, long now, Consumer<BucketSnapshot> sink)
      throws IOException, Invalid {
    long size = Files.size(file);
    try (DataInputStream in =
        new DataInputStream(new BufferedInputStream(Files.newInputStream(file), BUFFER_BYTES))) {
      Header header = header(in, validator, now);
      long headerBytes =
          MAGIC.length + 4 + 2 + header.writer.getBytes(StandardCharsets.UTF_8).length + TAIL_BYTES;
      long bodyBytes = in.readLong();
      int expectedCrc = in.readInt();
      if (bodyBytes < 0 || bodyBytes != size - headerBytes) {
        throw new Invalid(
            "the header says the body is "
                + bodyBytes
                + " bytes long but the file holds "
                + (size - headerBytes)
                + " bytes after the header (truncated or padded)");
      }
      Records records = new Records(in, bodyBytes);
      int count = 0;
      while (records.hasNext()) {
        BucketSnapshot bucket = records.next();
        Optional<String> error = validator.checkSnapshot(bucket, now);
        if (error.isPresent()) {
          throw new Invalid("bucket " + count + " ('" + shortKey(bucket) + "'): " + error.get());
        }
        count++;
        if (count > header.buckets) {
          throw new Invalid(
              "the body holds more buckets than the " + header.buckets + " the header declares");
        }
        sink.accept(bucket);
      }
      if (count != header.buckets) {
        throw new Invalid(
            "the header declares " + header.buckets + " buckets but the body holds " + count);
      }
      if (records.crc() != expectedCrc) {
        throw new Invalid(
            "the body's CRC32C is "
                + Integer.toHexString(records.crc())
                + " but the header says "
                + Integer.toHexString(expectedCrc)
                + " (the file was changed or damaged)");
      }
      return header;
    } catch (EOFException e) {
      throw new Invalid("the file ends early (truncated)");
    }
  }

  private static Header header(DataInputStream in, PeerInputValidator validator, long now)
      throws IOException, Invalid {
    byte[] magic = new byte[MAGIC.length];
    in.readFully(magic);
    if (!Arrays.equals(magic, MAGIC)) {
      throw new Invalid("it does not start with the magic WEIRSNAP: not a Weir snapshot");
    }
    int version = in.readInt();
    if (version != VERSION) {
      throw new Invalid(
          "format version " + version + "; this node reads version " + VERSION + " only");
    }
    int addressBytes = in.readUnsignedShort();
    if (addressBytes > PeerInputValidator.MAX_ADDRESS_LENGTH) {
      throw new Invalid(
          "the writer's address is "
              + addressBytes
              + " bytes long; at most "
              + PeerInputValidator.MAX_ADDRESS_LENGTH
              + " are allowed");
    }
    byte[] address = new byte[addressBytes];
    in.readFully(address);
    String writer = new String(address, StandardCharsets.UTF_8);
    Optional<String> error = validator.checkAddress("writer", writer);
    if (error.isPresent()) {
      throw new Invalid(error.get());
    }
    long writtenAt = in.readLong();
    long latest = SaturatingMath.add(now, PeerInputValidator.MAX_CLOCK_SKEW.toMillis());
    if (writtenAt < 0 || writtenAt > latest) {
      throw new Invalid(
          "written at "
              + writtenAt
              + ", not between 0 and this node's clock plus the allowed skew ("
              + latest
              + ")");
    }
    int buckets = in.readInt();
    if (buckets < 0 || buckets > MAX_BUCKETS) {
      throw new Invalid(
          "the header declares " + buckets + " buckets; 0 to " + MAX_BUCKETS + " are allowed");
    }
    return new Header(writer, writtenAt, buckets);
  }

  // A protobuf varint32 of at most 5 bytes; its bytes count toward the checksum.
  private static int varint(InputStream in, CRC32C crc, int[] bytes) throws IOException, Invalid {
    long value = 0;
    for (int i = 0; i < 5; i++) {
      int b = in.read();
      if (b < 0) {
        throw new EOFException();
      }
      crc.update(b);
      bytes[0]++;
      value |= (long) (b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) {
        return value > Integer.MAX_VALUE ? Integer.MAX_VALUE : (int) value;
      }
    }
    throw new Invalid("a record length is not a varint of at most 5 bytes");
  }

  /**
   * The records of a snapshot body read in order from a stream: each a varint length and a {@link
   * BucketSnapshot} of that many bytes, the body's CRC32C taken over every byte read.
   */
  private static final class Records {

    private final DataInputStream in;
    private final CRC32C crc = new CRC32C();
    private final int[] varintBytes = new int[1];
    private byte[] record = new byte[256];
    private long left;
    private int count;

    /** Creates the reader of the {@code bodyBytes} bytes of body {@code in} holds next. */
    Records(DataInputStream in, long bodyBytes) {
      this.in = in;
      this.left = bodyBytes;
    }

    /** Returns whether the body holds another record. */
    boolean hasNext() {
      return left > 0;
    }

    /**
     * Returns the next record's bucket.
     *
     * @throws Invalid naming the record when its length is out of bounds or it is no bucket
     * @throws IOException when the stream cannot be read, {@link EOFException} when it ends early
     */
    BucketSnapshot next() throws IOException, Invalid {
      int index = count++;
      varintBytes[0] = 0;
      int length = varint(in, crc, varintBytes);
      left -= varintBytes[0];
      if (length > MAX_RECORD_BYTES || length > left) {
        throw new Invalid(
            "record "
                + index
                + " claims "
                + length
                + " bytes; at most "
                + Math.min(MAX_RECORD_BYTES, left)
                + " are allowed (at most "
                + MAX_RECORD_BYTES
                + " per record, and no more than the body has left)");
      }
      if (record.length < length) {
        record = new byte[Math.max(length, Math.min(MAX_RECORD_BYTES, record.length * 2))];
      }
      in.readFully(record, 0, length);
      crc.update(record, 0, length);
      left -= length;
      try {
        return BucketSnapshot.parseFrom(ByteBuffer.wrap(record, 0, length));
      } catch (InvalidProtocolBufferException e) {
        throw new Invalid("record " + index + " is not a bucket: " + e.getMessage());
      }
    }

    /** Returns the CRC32C of the bytes read so far. */
    int crc() {
      return (int) crc.getValue();
    }
  }

  private static String shortKey(BucketSnapshot bucket) {
    String key = bucket.getKey();
    return key.length() <= 64 ? key : key.substring(0, 64) + "…";
  }
}
