package dev.weir.core.cluster.snapshot;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.engine.BucketState;
import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.LeakyBucketState;
import dev.weir.core.engine.SlidingWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.Status;
import dev.weir.proto.gubernator.BucketSnapshot;
import dev.weir.proto.gubernator.TokenBucketSnapshot;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The snapshot file format: a round trip, and every kind of bad file refused whole. */
class SnapshotFileTest {

  private static final long NOW = 1_767_225_600_000L;
  private static final String WRITER = "10.0.0.1:1051";
  private static final PeerInputValidator VALIDATOR =
      new PeerInputValidator(InputLimits.DEFAULTS, "10.0.0.9:1051");

  @TempDir Path dir;

  private static final List<BucketSnapshot> BUCKETS =
      List.of(
          snap(
              "t_a", new TokenBucketState(Status.OVER_LIMIT, 10, 60_000, 0, NOW - 5, NOW + 60_000)),
          snap("l_b", new LeakyBucketState(10, 60_000, 20, 7, NOW - 9, NOW + 60_000)),
          snap("f_c", new FixedWindowState(100, 60_000, NOW - 1_000, 42, NOW + 59_000)),
          snap("s_d", new SlidingWindowState(100, 60_000, NOW - 1_000, 30, 12, NOW + 119_000)));

  private static BucketSnapshot snap(String key, BucketState state) {
    return PeerProtos.toSnapshot(key, state);
  }

  private Path written(List<BucketSnapshot> buckets) throws IOException {
    Path file = dir.resolve("node.weirsnap");
    SnapshotFile.write(file, WRITER, NOW - 1_000, sink -> buckets.forEach(sink));
    return file;
  }

  private static List<BucketSnapshot> read(Path file) throws Exception {
    List<BucketSnapshot> out = new ArrayList<>();
    SnapshotFile.read(file, VALIDATOR, NOW, out::add);
    return out;
  }

  /** Reads {@code file} expecting it refused, asserting no bucket was passed on; returns why. */
  private static String refused(Path file) {
    List<BucketSnapshot> passed = new ArrayList<>();
    Throwable thrown =
        org.assertj.core.api.Assertions.catchThrowable(
            () -> SnapshotFile.read(file, VALIDATOR, NOW, passed::add));
    assertThat(thrown).isInstanceOf(SnapshotFile.Invalid.class);
    assertThat(passed).as("buckets passed on from a refused file").isEmpty();
    return thrown.getMessage();
  }

  @Test
  void write_thenRead_givesBackEveryBucketAndTheHeader() throws Exception {
    Path file = written(BUCKETS);
    List<BucketSnapshot> out = new ArrayList<>();

    SnapshotFile.Header header = SnapshotFile.read(file, VALIDATOR, NOW, out::add);

    assertThat(out).containsExactlyElementsOf(BUCKETS);
    assertThat(header).isEqualTo(new SnapshotFile.Header(WRITER, NOW - 1_000, 4));
  }

  @Test
  void liveBuckets_countsThoseLiveAtNow_upToOnePastTheLimit() throws Exception {
    Path file = written(BUCKETS);

    assertThat(SnapshotFile.liveBuckets(file, VALIDATOR, NOW, 10)).as("all live").isEqualTo(4);
    assertThat(SnapshotFile.liveBuckets(file, VALIDATOR, NOW + 60_000, 10))
        .as("the fixed window expired at NOW + 59 s, the token and leaky buckets at NOW + 60 s")
        .isEqualTo(1);
    assertThat(SnapshotFile.liveBuckets(file, VALIDATOR, NOW + 119_000, 10)).isZero();
    assertThat(SnapshotFile.liveBuckets(file, VALIDATOR, NOW, 1)).as("stops at 2").isEqualTo(2);
  }

  @Test
  void write_nothing_readsAsAnEmptySnapshot() throws Exception {
    assertThat(read(written(List.of()))).isEmpty();
  }

  @Test
  void read_wrongMagic_refusedAsForeign() throws Exception {
    Path file = dir.resolve("foreign.weirsnap");
    Files.writeString(file, "{\"this\": \"is json, not a snapshot, but long enough\"}");

    assertThat(refused(file)).contains("magic WEIRSNAP").contains("not a Weir snapshot");
  }

  @Test
  void read_futureVersion_refusedNamingBothVersions() throws Exception {
    Path file = raw(new Raw().version(2));

    assertThat(refused(file)).contains("format version 2").contains("version 1 only");
  }

  @Test
  void read_truncatedBody_refused() throws Exception {
    Path file = written(BUCKETS);
    byte[] all = Files.readAllBytes(file);
    Files.write(file, Arrays.copyOf(all, all.length - 7));

    assertThat(refused(file)).contains("truncated");
  }

  @Test
  void read_truncatedHeader_refused() throws Exception {
    Path file = written(BUCKETS);
    byte[] all = Files.readAllBytes(file);
    Files.write(file, Arrays.copyOf(all, 14));

    assertThat(refused(file)).contains("truncated");
  }

  @Test
  void read_emptyFile_refused() throws Exception {
    Path file = dir.resolve("empty.weirsnap");
    Files.write(file, new byte[0]);

    assertThat(refused(file)).contains("truncated");
  }

  @Test
  void read_flippedBitInBody_refusedByTheChecksum() throws Exception {
    // A count's digit changes from 42 to 43: the records still parse, only the checksum differs.
    Path file = written(BUCKETS);
    byte[] all = Files.readAllBytes(file);
    byte[] count =
        snap("f_c", new FixedWindowState(100, 60_000, NOW - 1_000, 42, NOW + 59_000)).toByteArray();
    int at = indexOf(all, count);
    assertThat(at).isPositive();
    byte[] changed =
        snap("f_c", new FixedWindowState(100, 60_000, NOW - 1_000, 43, NOW + 59_000)).toByteArray();
    System.arraycopy(changed, 0, all, at, changed.length);
    Files.write(file, all);

    assertThat(refused(file)).contains("CRC32C").contains("changed or damaged");
  }

  @Test
  void read_headerCountDiffersFromTheBody_refused() throws Exception {
    Path file = raw(new Raw().count(5));

    assertThat(refused(file)).contains("declares 5 buckets but the body holds 4");
  }

  @Test
  void write_thenRead_keyAsLongAsTheLargestLimitsAllow_readsBack() throws Exception {
    InputLimits largest =
        new InputLimits(
            InputLimits.DEFAULT_MAX_MESSAGE_BYTES,
            InputLimits.DEFAULT_MAX_MESSAGE_BYTES,
            InputLimits.LONGEST_NAME_OR_KEY,
            InputLimits.LONGEST_NAME_OR_KEY,
            64,
            256);
    PeerInputValidator validator = new PeerInputValidator(largest, "10.0.0.9:1051");
    String key =
        "n".repeat(InputLimits.LONGEST_NAME_OR_KEY)
            + "_"
            + "k".repeat(InputLimits.LONGEST_NAME_OR_KEY);
    BucketSnapshot longest =
        snap(key, new TokenBucketState(Status.UNDER_LIMIT, 10, 60_000, 9, NOW - 5, NOW + 60_000));
    Path file = written(List.of(longest, BUCKETS.get(1)));
    List<BucketSnapshot> out = new ArrayList<>();

    SnapshotFile.read(file, validator, NOW, out::add);

    assertThat(out).containsExactly(longest, BUCKETS.get(1));
  }

  @Test
  void read_absurdRecordLength_refusedWithoutAllocatingIt() throws Exception {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07});
    body.write(new byte[16]);
    Path file = raw(new Raw().body(body.toByteArray()).count(1));

    assertThat(refused(file)).contains("record 0 claims 2147483647 bytes");
  }

  @Test
  void read_overlongVarint_refused() throws Exception {
    byte[] body = new byte[12];
    Arrays.fill(body, (byte) 0x80);
    Path file = raw(new Raw().body(body).count(1));

    assertThat(refused(file)).contains("not a varint");
  }

  @Test
  void read_hugeDeclaredCount_refusedBeforeTheBody() throws Exception {
    Path file = raw(new Raw().count(Integer.MAX_VALUE));

    assertThat(refused(file)).contains("declares 2147483647 buckets; 0 to 100000000 are allowed");
  }

  @Test
  void read_negativeCount_refused() throws Exception {
    assertThat(refused(raw(new Raw().count(-1)))).contains("declares -1 buckets");
  }

  @Test
  void read_bodyLengthBeyondTheFile_refused() throws Exception {
    Path file = raw(new Raw().bodyLength(Long.MAX_VALUE));

    assertThat(refused(file)).contains("truncated or padded");
  }

  @Test
  void read_absurdAddressLength_refused() throws Exception {
    Path file = raw(new Raw().writer("x".repeat(600)));

    assertThat(refused(file)).contains("600 bytes long; at most 512");
  }

  @Test
  void read_writtenInTheFuture_refused() throws Exception {
    Path file = raw(new Raw().writtenAt(NOW + 3_600_000));

    assertThat(refused(file)).contains("written at " + (NOW + 3_600_000));
  }

  @Test
  void read_hostileNegativeRemaining_refusedWholeNamingTheBucketAndField() throws Exception {
    BucketSnapshot hostile =
        BucketSnapshot.newBuilder()
            .setKey("t_evil")
            .setTokenBucket(
                TokenBucketSnapshot.newBuilder()
                    .setLimit(10)
                    .setDuration(60_000)
                    .setRemaining(-5)
                    .setCreatedAt(NOW)
                    .setExpireAt(NOW + 60_000))
            .build();
    List<BucketSnapshot> buckets = new ArrayList<>(BUCKETS);
    buckets.add(hostile);

    assertThat(refused(written(buckets)))
        .contains("bucket 4 ('t_evil')")
        .contains("field 'remaining' cannot be negative, got -5");
  }

  @Test
  void read_hostileExpiryCenturiesAhead_refused() throws Exception {
    List<BucketSnapshot> buckets =
        List.of(snap("f_forever", new FixedWindowState(100, 60_000, NOW, 1, Long.MAX_VALUE)));

    assertThat(refused(written(buckets))).contains("field 'expire_at' is " + Long.MAX_VALUE);
  }

  @Test
  void read_hostileNegativeLimit_refused() throws Exception {
    List<BucketSnapshot> buckets =
        List.of(snap("f_neg", new FixedWindowState(-1, 60_000, NOW, 1, NOW + 60_000)));

    assertThat(refused(written(buckets))).contains("field 'limit' cannot be negative");
  }

  @Test
  void read_recordThatIsNotABucket_refused() throws Exception {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(3);
    body.write(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff});
    Path file = raw(new Raw().body(body.toByteArray()).count(1));

    assertThat(refused(file)).contains("record 0 is not a bucket");
  }

  @Test
  void read_keyLongerThanAClientMaySend_refused() throws Exception {
    List<BucketSnapshot> buckets =
        List.of(snap("k".repeat(5_000), new FixedWindowState(100, 60_000, NOW, 1, NOW + 60_000)));

    assertThat(refused(written(buckets))).contains("bytes long; at most");
  }

  private static int indexOf(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }

  /** A snapshot file built field by field, with a correct checksum unless told otherwise. */
  private static final class Raw {
    private int version = SnapshotFile.VERSION;
    private String writer = WRITER;
    private long writtenAt = NOW - 1_000;
    private byte[] body = body(BUCKETS);
    private int count = BUCKETS.size();
    private Long bodyLength;

    Raw version(int v) {
      version = v;
      return this;
    }

    Raw writer(String w) {
      writer = w;
      return this;
    }

    Raw writtenAt(long t) {
      writtenAt = t;
      return this;
    }

    Raw body(byte[] b) {
      body = b;
      return this;
    }

    Raw count(int c) {
      count = c;
      return this;
    }

    Raw bodyLength(long l) {
      bodyLength = l;
      return this;
    }

    private static byte[] body(List<BucketSnapshot> buckets) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      try {
        for (BucketSnapshot b : buckets) {
          b.writeDelimitedTo(out);
        }
      } catch (IOException e) {
        throw new AssertionError(e);
      }
      return out.toByteArray();
    }

    byte[] bytes() {
      byte[] address = writer.getBytes(StandardCharsets.UTF_8);
      CRC32C crc = new CRC32C();
      crc.update(body);
      ByteBuffer b = ByteBuffer.allocate(8 + 4 + 2 + address.length + 24 + body.length);
      b.put(SnapshotFile.MAGIC)
          .putInt(version)
          .putShort((short) address.length)
          .put(address)
          .putLong(writtenAt)
          .putInt(count)
          .putLong(bodyLength != null ? bodyLength : body.length)
          .putInt((int) crc.getValue())
          .put(body);
      return b.array();
    }
  }

  private Path raw(Raw raw) throws IOException {
    Path file = dir.resolve("raw.weirsnap");
    Files.write(file, raw.bytes());
    return file;
  }

  @Test
  void raw_withDefaults_isAValidSnapshot() throws Exception {
    assertThat(read(raw(new Raw()))).containsExactlyElementsOf(BUCKETS);
  }
}
