package dev.weir.core.cluster.snapshot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.weir.core.cluster.ClusterRateLimitService;
import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.engine.FixedWindowState;
import dev.weir.core.engine.TokenBucketState;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.Status;
import dev.weir.core.testkit.FakeClock;
import dev.weir.core.testkit.InMemoryBucketStore;
import dev.weir.proto.gubernator.BucketSnapshot;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/** Saving a node's buckets to its file and loading every node's file once. */
class SnapshotDirectoryTest {

  @TempDir Path dir;

  private final FakeClock clock = new FakeClock();
  private final long now = clock.wallMillis();
  private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

  private SnapshotDirectory node(String address) {
    return new SnapshotDirectory(
        dir, address, new PeerInputValidator(InputLimits.DEFAULTS, address), clock);
  }

  private FixedWindowState window(long count, long expireAt) {
    return new FixedWindowState(100, 60_000, now, count, expireAt);
  }

  @BeforeEach
  void recordLog() {
    logged.start();
    ((Logger) LoggerFactory.getLogger(SnapshotDirectory.class)).addAppender(logged);
  }

  @AfterEach
  void stopRecordingLog() {
    ((Logger) LoggerFactory.getLogger(SnapshotDirectory.class)).detachAppender(logged);
  }

  /** Returns the lines {@link SnapshotDirectory} logged at {@code level}, formatted. */
  private List<String> lines(Level level) {
    return logged.list.stream()
        .filter(e -> e.getLevel() == level)
        .map(ILoggingEvent::getFormattedMessage)
        .toList();
  }

  private List<String> names() throws IOException {
    try (Stream<Path> all = Files.list(dir)) {
      return all.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  @Test
  void fileName_sanitisesTheAddress() {
    assertThat(SnapshotDirectory.fileName("[fd00::1]:1051")).isEqualTo("_fd00__1__1051.weirsnap");
    assertThat(node("weir-0.weir.ns.svc:1051").ownFile())
        .isEqualTo(dir.resolve("weir-0.weir.ns.svc_1051.weirsnap"));
  }

  /**
   * After the first file, a file is claimed while its buckets live at the loader's clock fit the
   * room left, though its header declares more; one whose live buckets do not fit is left.
   */
  @Test
  void load_withRoom_countsOnlyTheLiveBucketsOfFurtherFiles() throws IOException {
    InMemoryBucketStore own = new InMemoryBucketStore(clock);
    own.put("own_1", window(1, now + 600_000));
    node("10.0.0.1:1051").save(own);
    InMemoryBucketStore fewLive = new InMemoryBucketStore(clock);
    InMemoryBucketStore manyLive = new InMemoryBucketStore(clock);
    for (int i = 0; i < 10; i++) {
      long duration = i < 2 ? 600_000 : 60_000;
      fewLive.put("few_" + i, new FixedWindowState(100, duration, now, 1, now + duration));
      duration = i < 4 ? 600_000 : 60_000;
      manyLive.put("many_" + i, new FixedWindowState(100, duration, now, 1, now + duration));
    }
    node("10.0.0.2:1051").save(fewLive);
    node("10.0.0.3:1051").save(manyLive);
    clock.advance(Duration.ofMinutes(2));
    List<BucketSnapshot> loaded = new ArrayList<>();

    SnapshotDirectory.Loaded result = node("10.0.0.1:1051").load(loaded::add, () -> 3);

    assertThat(result.files())
        .containsExactly(
            dir.resolve("10.0.0.1_1051.weirsnap"), dir.resolve("10.0.0.2_1051.weirsnap"));
    assertThat(result.left())
        .as("4 live buckets, 3 fit")
        .containsExactly(dir.resolve("10.0.0.3_1051.weirsnap"));
    assertThat(names()).containsExactly("10.0.0.3_1051.weirsnap");
  }

  @Test
  void save_writesLiveBucketsOnly_withoutStandInsOrExpired() throws IOException {
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    store.put("live_a", window(3, now + 60_000));
    store.put("dead_b", window(3, now));
    store.put(ClusterRateLimitService.STAND_IN_PREFIX + "x_c", window(3, now + 60_000));

    int written = node("10.0.0.1:1051").save(store);

    assertThat(written).isEqualTo(1);
    assertThat(names()).containsExactly("10.0.0.1_1051.weirsnap");
  }

  @Test
  void load_readsEveryNodesFileOnce_andDeletesThem() throws IOException {
    InMemoryBucketStore a = new InMemoryBucketStore(clock);
    a.put("k_1", window(3, now + 60_000));
    InMemoryBucketStore b = new InMemoryBucketStore(clock);
    b.put("k_2", window(4, now + 60_000));
    node("10.0.0.1:1051").save(a);
    node("10.0.0.2:1051").save(b);
    List<BucketSnapshot> loaded = new ArrayList<>();

    SnapshotDirectory.Loaded first = node("10.0.0.7:1051").load(loaded::add);
    SnapshotDirectory.Loaded second = node("10.0.0.8:1051").load(loaded::add);

    assertThat(loaded)
        .containsExactly(
            PeerProtos.toSnapshot("k_1", window(3, now + 60_000)),
            PeerProtos.toSnapshot("k_2", window(4, now + 60_000)));
    assertThat(first.files()).hasSize(2);
    assertThat(first.bucketCount()).isEqualTo(2);
    assertThat(second.files()).isEmpty();
    assertThat(names()).isEmpty();
  }

  /** Saves {@code address}'s snapshot of one bucket and leaves it claimed, claimed at {@code at}. */
  private Path leftClaimed(String address, String key, long at) throws IOException {
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    store.put(key, window(3, now + 60_000));
    SnapshotDirectory writer = node(address);
    writer.save(store);
    Path claimed = dir.resolve(writer.ownFile().getFileName() + ".loading");
    Files.move(writer.ownFile(), claimed);
    Files.setLastModifiedTime(claimed, FileTime.fromMillis(at));
    return claimed;
  }

  @Test
  void load_ownFileLeftClaimedByAStartThatDied_isLoadedAMinuteAfterItsClaim() throws IOException {
    leftClaimed("10.0.0.1:1051", "k_1", now);
    InMemoryBucketStore since = new InMemoryBucketStore(clock);
    since.put("k_2", window(5, now + 60_000));
    List<BucketSnapshot> loaded = new ArrayList<>();
    node("10.0.0.1:1051").load(loaded::add);
    assertThat(loaded).as("another node sharing the directory may still be loading it").isEmpty();
    node("10.0.0.1:1051").save(since);
    clock.advance(SnapshotDirectory.OWN_STALE_CLAIM);

    node("10.0.0.1:1051").load(loaded::add);

    assertThat(loaded)
        .as("the left claim and the file written since, neither replacing the other")
        .containsExactlyInAnyOrder(
            PeerProtos.toSnapshot("k_1", window(3, now + 60_000)),
            PeerProtos.toSnapshot("k_2", window(5, now + 60_000)));
    assertThat(names()).isEmpty();
  }

  @Test
  void save_leavesOutABucketALoadWouldRefuse_soTheOthersStillLoad() throws IOException {
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    store.put(
        "k_1",
        new TokenBucketState(
            Status.UNDER_LIMIT, 100, 60_000, 99, now + 3_600_000, now + 3_660_000));
    store.put("k_2", window(3, now + 60_000));
    SnapshotDirectory self = node("10.0.0.1:1051");

    int written = self.save(store);
    List<BucketSnapshot> loaded = new ArrayList<>();
    SnapshotDirectory.Loaded result = self.load(loaded::add);

    assertThat(result.rejected()).isEmpty();
    assertThat(loaded).containsExactly(PeerProtos.toSnapshot("k_2", window(3, now + 60_000)));
    assertThat(written).isEqualTo(1);
  }

  @Test
  void load_aNewFileClaimedWhileAnEarlierClaimOfTheSameNameIsLeft_replacesNeither()
      throws IOException {
    Path bare = leftClaimed("10.0.0.1:1051", "k_1", now);
    Path left = dir.resolve(bare.getFileName() + "-" + now);
    Files.move(bare, left);
    InMemoryBucketStore since = new InMemoryBucketStore(clock);
    since.put("k_2", window(5, now + 60_000));
    node("10.0.0.1:1051").save(since);
    List<BucketSnapshot> loaded = new ArrayList<>();
    List<String> whileLoading = new ArrayList<>();

    node("10.0.0.1:1051")
        .load(
            b -> {
              try {
                whileLoading.addAll(names());
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
              loaded.add(b);
            });

    assertThat(whileLoading)
        .as("the new claim takes the next free name beside the left claim of the same time")
        .containsExactlyInAnyOrder(
            left.getFileName().toString(), left.getFileName() + "-1");
    assertThat(loaded).containsExactly(PeerProtos.toSnapshot("k_2", window(5, now + 60_000)));
    clock.advance(SnapshotDirectory.OWN_STALE_CLAIM);

    node("10.0.0.1:1051").load(loaded::add);

    assertThat(loaded)
        .as("the left claim is loaded once stale, not replaced by the later claim")
        .containsExactly(
            PeerProtos.toSnapshot("k_2", window(5, now + 60_000)),
            PeerProtos.toSnapshot("k_1", window(3, now + 60_000)));
    assertThat(names()).isEmpty();
  }

  @Test
  void load_twoLeftClaimsOfTheSameFile_areBothLoaded() throws IOException {
    Path first = leftClaimed("10.0.0.1:1051", "k_2", now);
    Files.move(first, dir.resolve(first.getFileName() + "-" + now));
    leftClaimed("10.0.0.1:1051", "k_1", now);
    clock.advance(SnapshotDirectory.OWN_STALE_CLAIM);
    List<BucketSnapshot> loaded = new ArrayList<>();

    node("10.0.0.1:1051").load(loaded::add);

    assertThat(loaded)
        .containsExactlyInAnyOrder(
            PeerProtos.toSnapshot("k_1", window(3, now + 60_000)),
            PeerProtos.toSnapshot("k_2", window(3, now + 60_000)));
    assertThat(names()).isEmpty();
  }

  @Test
  void save_writesAFileOnlyItsOwnerCanRead_inADirectoryOnlyItsOwnerCanEnter() throws IOException {
    Assumptions.assumeTrue(
        Files.getFileStore(dir).supportsFileAttributeView("posix"),
        "the file system of the temporary directory has no POSIX permissions");
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    store.put("k_1", window(3, now + 60_000));
    Path created = dir.resolve("snapshots");
    SnapshotDirectory self =
        new SnapshotDirectory(
            created,
            "10.0.0.1:1051",
            new PeerInputValidator(InputLimits.DEFAULTS, "10.0.0.1:1051"),
            clock);

    self.save(store);

    assertThat(Files.getPosixFilePermissions(self.ownFile()))
        .containsExactlyInAnyOrder(
            PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);
    assertThat(Files.getPosixFilePermissions(created))
        .containsExactlyInAnyOrder(
            PosixFilePermission.OWNER_READ,
            PosixFilePermission.OWNER_WRITE,
            PosixFilePermission.OWNER_EXECUTE);
  }

  @Test
  void check_leavesTheModeOfADirectoryTheOperatorMade() throws IOException {
    Assumptions.assumeTrue(
        Files.getFileStore(dir).supportsFileAttributeView("posix"),
        "the file system of the temporary directory has no POSIX permissions");
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-x---"));

    assertThat(node("10.0.0.1:1051").check()).isEmpty();

    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)))
        .isEqualTo("rwxr-x---");
  }

  @Test
  void load_anotherNodesClaim_isLeftToItUntilStale() throws IOException {
    Path claimed = leftClaimed("10.0.0.2:1051", "k_1", now);
    List<BucketSnapshot> loaded = new ArrayList<>();

    node("10.0.0.1:1051").load(loaded::add);
    assertThat(loaded).as("that node may still be loading it").isEmpty();
    assertThat(claimed).exists();

    clock.advance(SnapshotDirectory.STALE_CLAIM);
    node("10.0.0.1:1051").load(loaded::add);

    assertThat(loaded).containsExactly(PeerProtos.toSnapshot("k_1", window(3, now + 60_000)));
    assertThat(names()).isEmpty();
  }

  @Test
  void load_aFileLeftClaimedTwice_isSetAsideRejected() throws IOException {
    leftClaimed("10.0.0.2:1051", "k_1", now);
    clock.advance(SnapshotDirectory.STALE_CLAIM);
    List<String> released = new ArrayList<>();
    assertThatThrownBy(
            () ->
                node("10.0.0.1:1051")
                    .load(
                        b -> {
                          try {
                            released.addAll(names());
                          } catch (IOException e) {
                            throw new UncheckedIOException(e);
                          }
                          throw new IllegalStateException("killed while loading");
                        }))
        .hasMessage("killed while loading");
    assertThat(released)
        .singleElement()
        .asString()
        .matches("10\\.0\\.0\\.2_1051\\.left-[0-9]+\\.weirsnap\\.loading-[0-9]+");
    clock.advance(SnapshotDirectory.STALE_CLAIM);
    List<BucketSnapshot> loaded = new ArrayList<>();

    node("10.0.0.1:1051").load(loaded::add);

    assertThat(loaded).isEmpty();
    assertThat(names()).singleElement().asString().endsWith(".weirsnap.rejected");
  }

  @Test
  void load_claimsAreMarkedWithTheirTime() throws IOException {
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    store.put("k_1", window(3, now + 60_000));
    SnapshotDirectory writer = node("10.0.0.2:1051");
    writer.save(store);
    Files.setLastModifiedTime(writer.ownFile(), FileTime.fromMillis(now - 86_400_000));
    Path claimed = dir.resolve(writer.ownFile().getFileName() + ".loading-" + now);
    List<Long> claimTimes = new ArrayList<>();

    node("10.0.0.1:1051")
        .load(
            b -> {
              try {
                claimTimes.add(Files.getLastModifiedTime(claimed).toMillis());
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            });

    assertThat(claimTimes).as("the claim's time, not the write's").containsExactly(now);
  }

  @Test
  void load_invalidFile_isRenamedRejected_andNothingOfItPassedOn() throws IOException {
    Files.writeString(dir.resolve("x_1.weirsnap"), "not a snapshot at all, just some text");
    List<BucketSnapshot> loaded = new ArrayList<>();

    SnapshotDirectory.Loaded result = node("10.0.0.7:1051").load(loaded::add);

    assertThat(loaded).isEmpty();
    assertThat(result.rejected()).containsExactly(dir.resolve("x_1.weirsnap"));
    assertThat(names()).containsExactly("x_1.weirsnap.rejected");
  }

  @Test
  void load_aSecondInvalidFileOfTheSameName_isKeptBesideTheFirstRejected() throws IOException {
    Files.writeString(dir.resolve("x_1.weirsnap"), "not a snapshot at all, just some text");
    node("10.0.0.7:1051").load(b -> {});
    Files.writeString(dir.resolve("x_1.weirsnap"), "another bad file of the same name");

    node("10.0.0.7:1051").load(b -> {});

    assertThat(names())
        .containsExactlyInAnyOrder("x_1.weirsnap.rejected", "x_1.weirsnap-1.rejected");
    assertThat(Files.readString(dir.resolve("x_1.weirsnap.rejected")))
        .isEqualTo("not a snapshot at all, just some text");
  }

  @Test
  void load_missingDirectory_findsNothing() {
    SnapshotDirectory missing =
        new SnapshotDirectory(
            dir.resolve("absent"),
            "10.0.0.7:1051",
            new PeerInputValidator(InputLimits.DEFAULTS, "10.0.0.7:1051"),
            clock);

    assertThat(missing.load(b -> {}).files()).isEmpty();
  }

  @Test
  void check_missingDirectory_isCreated() {
    SnapshotDirectory nested =
        new SnapshotDirectory(
            dir.resolve("a/b"),
            "10.0.0.7:1051",
            new PeerInputValidator(InputLimits.DEFAULTS, "10.0.0.7:1051"),
            clock);

    assertThat(nested.check()).isEmpty();
    assertThat(dir.resolve("a/b")).isDirectory();
  }

  @Test
  void check_aFileWhereTheDirectoryShouldBe_namesTheVariableAndPath() throws IOException {
    Path file = Files.writeString(dir.resolve("plain"), "x");
    SnapshotDirectory wrong =
        new SnapshotDirectory(
            file,
            "10.0.0.7:1051",
            new PeerInputValidator(InputLimits.DEFAULTS, "10.0.0.7:1051"),
            clock);

    assertThat(wrong.check())
        .hasValue(
            "WEIR_SNAPSHOT_DIR='"
                + file
                + "' is not a directory; snapshots cannot be saved"
                + " there");
    assertThat(wrong.load(b -> {}).files()).isEmpty();
  }

  @Test
  void save_replacesTheNodesPreviousFile_leavingNoTemporaryFile() throws IOException {
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    store.put("k_1", window(3, now + 60_000));
    SnapshotDirectory self = node("10.0.0.1:1051");
    self.save(store);
    store.put("k_1", window(5, now + 60_000));

    self.save(store);
    List<BucketSnapshot> loaded = new ArrayList<>();
    self.load(loaded::add);

    assertThat(loaded).containsExactly(PeerProtos.toSnapshot("k_1", window(5, now + 60_000)));
  }

  /**
   * A stop whose thread was interrupted (to cut its waits short) still writes the file, and a
   * start on such a thread still loads it; the thread stays interrupted.
   */
  @Test
  void saveAndLoad_onAnInterruptedThread_writeAndReadTheFile_keepingTheInterrupt()
      throws IOException {
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    store.put("k_1", window(3, now + 60_000));
    SnapshotDirectory self = node("10.0.0.1:1051");
    List<BucketSnapshot> loaded = new ArrayList<>();
    int written;
    SnapshotDirectory.Loaded found;
    boolean interruptedAfterSave;
    boolean interruptedAfterLoad;
    Thread.currentThread().interrupt();
    try {
      written = self.save(store);
      interruptedAfterSave = Thread.currentThread().isInterrupted();
      found = self.load(loaded::add);
      interruptedAfterLoad = Thread.currentThread().isInterrupted();
    } finally {
      Thread.interrupted();
    }

    assertThat(written).isEqualTo(1);
    assertThat(found.files()).containsExactly(self.ownFile());
    assertThat(loaded).containsExactly(PeerProtos.toSnapshot("k_1", window(3, now + 60_000)));
    assertThat(interruptedAfterSave).isTrue();
    assertThat(interruptedAfterLoad).isTrue();
    assertThat(names()).isEmpty();
  }

  /**
   * A write cut short (a SIGKILL at the end of the grace period) leaves its temporary file; a later
   * start removes it once it has not changed for {@link SnapshotDirectory#STALE_TEMPORARY}, so that
   * such files of addresses that never come back do not fill the volume. A recent one may belong
   * to a node still writing, and stays.
   */
  @Test
  void load_temporaryFileOfAWriteCutShort_isRemovedOnceStale() throws IOException {
    Path abandoned = dir.resolve("10.0.0.9_1051.weirsnap.tmp");
    Path writing = dir.resolve("10.0.0.8_1051.weirsnap.tmp");
    Files.write(abandoned, new byte[64]);
    Files.write(writing, new byte[64]);
    long stale = SnapshotDirectory.STALE_TEMPORARY.toMillis();
    Files.setLastModifiedTime(abandoned, FileTime.fromMillis(now - stale - 1));
    Files.setLastModifiedTime(writing, FileTime.fromMillis(now - stale + 60_000));

    SnapshotDirectory.Loaded loaded = node("10.0.0.1:1051").load(b -> {});

    assertThat(loaded.files()).isEmpty();
    assertThat(names()).containsExactly("10.0.0.8_1051.weirsnap.tmp");
  }

  /**
   * A file whose buckets were all passed on counts as loaded, not ignored, when its claim cannot be
   * deleted afterwards (here a directory took the claim's name while it was read).
   */
  @Test
  void load_claimThatCannotBeDeletedAfterItsBucketsWereUsed_countsAsLoadedNotIgnored()
      throws IOException {
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    store.put("k_1", window(3, now + 60_000));
    SnapshotDirectory self = node("10.0.0.1:1051");
    self.save(store);
    List<BucketSnapshot> passed = new ArrayList<>();

    SnapshotDirectory.Loaded loaded =
        self.load(
            b -> {
              passed.add(b);
              try (Stream<Path> all = Files.list(dir)) {
                Path claim = all.filter(p -> p.toString().contains(".loading")).findFirst().get();
                Files.delete(claim);
                Files.createDirectory(claim);
                Files.write(claim.resolve("x"), new byte[1]);
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
            });

    assertThat(passed).hasSize(1);
    assertThat(loaded.files()).containsExactly(self.ownFile());
    assertThat(loaded.rejected()).isEmpty();
    assertThat(loaded.bucketCount()).isEqualTo(1);
    assertThat(lines(Level.ERROR))
        .singleElement()
        .asString()
        .startsWith("loaded snapshot " + self.ownFile() + " but cannot delete it as ")
        .endsWith("; delete it, or a later start loads it again");
  }

  /**
   * A stale temporary file that cannot be removed (here a directory that is not empty took its
   * name) is named in a WARN, not left silently.
   */
  @Test
  void load_staleTemporaryFileThatCannotBeRemoved_warnsNamingIt() throws IOException {
    Path stuck = Files.createDirectory(dir.resolve("10.0.0.9_1051.weirsnap.tmp"));
    Files.write(stuck.resolve("x"), new byte[1]);
    Files.setLastModifiedTime(
        stuck, FileTime.fromMillis(now - SnapshotDirectory.STALE_TEMPORARY.toMillis() - 1));

    node("10.0.0.1:1051").load(b -> {});

    assertThat(lines(Level.WARN))
        .singleElement()
        .asString()
        .startsWith("cannot remove " + stuck + ", left by a snapshot write that did not finish");
  }

  /**
   * A read that finds the file invalid after some of its buckets were passed on (here it is cut
   * short while it is read) reports the file partly loaded at ERROR, counts it loaded with the
   * buckets passed, and deletes the claim: the rest of a file that fails a check cannot be used.
   */
  @Test
  void load_readFailingAfterSomeBucketsWerePassedOn_reportsPartlyLoadedAndDeletesTheClaim()
      throws IOException {
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    for (int i = 0; i < 5_000; i++) {
      store.put("key_" + i + "_".repeat(100), window(1, now + 60_000));
    }
    SnapshotDirectory self = node("10.0.0.1:1051");
    self.save(store);
    List<BucketSnapshot> passed = new ArrayList<>();

    SnapshotDirectory.Loaded loaded =
        self.load(
            b -> {
              if (passed.isEmpty()) {
                cutShortTheClaim();
              }
              passed.add(b);
            });
    clock.advance(SnapshotDirectory.STALE_CLAIM.plusMinutes(1));
    List<BucketSnapshot> again = new ArrayList<>();
    self.load(again::add);

    assertThat(passed).isNotEmpty().hasSizeLessThan(5_000);
    assertThat(loaded.files()).containsExactly(self.ownFile());
    assertThat(loaded.rejected()).isEmpty();
    assertThat(loaded.bucketCount()).isEqualTo(passed.size());
    assertThat(lines(Level.ERROR))
        .singleElement()
        .asString()
        .startsWith(
            "snapshot "
                + self.ownFile()
                + " partly loaded: "
                + passed.size()
                + " buckets passed on before the read failed: ");
    assertThat(again).isEmpty();
    assertThat(names()).isEmpty();
  }

  /**
   * A read that fails with an I/O error after some of the file's buckets were passed on reports
   * the file partly loaded at ERROR and keeps the claim, so that a later start loads all of it.
   */
  @Test
  void load_ioErrorAfterSomeBucketsWerePassedOn_keepsTheClaimForALaterStart() throws IOException {
    InMemoryBucketStore store = new InMemoryBucketStore(clock);
    for (int i = 0; i < 10; i++) {
      store.put("key_" + i, window(1, now + 60_000));
    }
    SnapshotDirectory self = node("10.0.0.1:1051");
    self.save(store);
    self.readWith(
        (file, validator, at, sink) -> {
          try {
            return SnapshotFile.read(
                file,
                validator,
                at,
                b -> {
                  sink.accept(b);
                  throw new UncheckedIOException(new IOException("Input/output error"));
                });
          } catch (UncheckedIOException e) {
            throw e.getCause();
          }
        });
    List<BucketSnapshot> passed = new ArrayList<>();

    SnapshotDirectory.Loaded loaded = self.load(passed::add);

    assertThat(passed).hasSize(1);
    assertThat(loaded.files()).containsExactly(self.ownFile());
    assertThat(lines(Level.ERROR))
        .singleElement()
        .asString()
        .startsWith(
            "snapshot " + self.ownFile() + " partly loaded: 1 buckets passed on before the read"
                + " failed: java.io.IOException: Input/output error; kept claimed as ")
        .endsWith(", so that a later start loads the rest (the buckets passed on merge again with"
                + " no effect)");
    assertThat(names()).singleElement().asString().contains(SnapshotDirectory.CLAIMED);

    clock.advance(SnapshotDirectory.STALE_CLAIM.plusMinutes(1));
    self.readWith(SnapshotFile::read);
    List<BucketSnapshot> again = new ArrayList<>();
    self.load(again::add);

    assertThat(again).hasSize(10);
    assertThat(names()).isEmpty();
  }

  // Truncates the claimed file to one and a half read buffers: past what the reader has buffered
  // when the first bucket is passed on, so that the read fails after some buckets.
  private void cutShortTheClaim() {
    try (Stream<Path> all = Files.list(dir)) {
      Path claim = all.filter(p -> p.toString().contains(".loading")).findFirst().get();
      try (FileChannel channel = FileChannel.open(claim, StandardOpenOption.WRITE)) {
        channel.truncate(SnapshotFile.BUFFER_BYTES * 3L / 2);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
