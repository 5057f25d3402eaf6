package dev.weir.core.cluster.snapshot;

import dev.weir.core.cluster.peer.PeerInputValidator;
import dev.weir.core.cluster.peer.PeerProtos;
import dev.weir.core.cluster.ring.StandInKeys;
import dev.weir.core.config.EnvVar;
import dev.weir.core.store.BucketStore;
import dev.weir.core.time.Clock;
import dev.weir.proto.gubernator.BucketSnapshot;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The directory ({@code WEIR_SNAPSHOT_DIR}) where nodes keep their bucket snapshots across a full
 * restart: one {@link SnapshotFile} per node, named after its advertised address.
 *
 * <p>{@link #save} writes this node's live buckets to a temporary file, forces it to disk, renames
 * it over the node's file atomically and forces the directory. {@link #load} claims the snapshot
 * files in the directory (any node's: a pod may come back under another name; its own first) by
 * renaming each to {@code .loading-<millis>}, so two nodes sharing the directory never both load
 * one (a name of its own, so that a claim never replaces one left by an earlier start), as long as
 * the loading node's cache has room for their live buckets; it passes the buckets of each valid
 * file on and deletes the file, so a second restart does not load it again. A file that fails a
 * check is logged with what is wrong and renamed to {@code .rejected}, its buckets unused. A
 * claimed file left by a start that did not finish loading it is loaded by a later start (see
 * {@link #STALE_CLAIM}), and a temporary file left by a save that did not finish ({@code
 * <name>.tmp}) is removed by one once unchanged for 10 minutes ({@link #STALE_TEMPORARY}).
 */
public final class SnapshotDirectory {

  private static final Logger LOG = LoggerFactory.getLogger(SnapshotDirectory.class);

  /** The ending of a snapshot file's name. */
  public static final String SUFFIX = ".weirsnap";

  /**
   * What a claimed file's name gets, followed by {@code -<claim millis>} (and {@code -<n>} when
   * that name is taken): the file is being loaded.
   */
  static final String CLAIMED = ".loading";

  /**
   * The name of a claimed file: the snapshot's name (group 1), {@link #CLAIMED} and what makes the
   * name unique; a bare {@code .loading}, as claims were named before, is one too.
   */
  private static final Pattern CLAIM =
      Pattern.compile("(.+" + Pattern.quote(SUFFIX) + ")" + Pattern.quote(CLAIMED) + "(-[0-9]+)*");

  /**
   * How long after its claim another node's claimed file is taken as left by a start that did not
   * finish (killed while loading it), and loaded by the next start.
   */
  public static final Duration STALE_CLAIM = Duration.ofMinutes(10);

  /**
   * How long after its claim this node's own claimed file is taken as left by a start that did not
   * finish: short, since the node restarts under its own address, but long enough for another node
   * sharing the directory to finish loading it.
   */
  public static final Duration OWN_STALE_CLAIM = Duration.ofMinutes(1);

  /**
   * The ending of the name a file not loaded is kept under for inspection: its snapshot name
   * followed by this, or by {@code -<n>} and this when that name is taken.
   */
  static final String REJECTED = ".rejected";

  /**
   * The ending of the temporary file a save writes before renaming it: the snapshot's name followed
   * by this. One left by a write cut short (the process killed) is removed by a later start once it
   * has not changed for {@link #STALE_TEMPORARY}.
   */
  static final String TEMPORARY = ".tmp";

  /**
   * How long a temporary file must have stayed unchanged before a start takes it as left by a
   * write cut short and removes it: a node still writing its file is left alone.
   */
  public static final Duration STALE_TEMPORARY = Duration.ofMinutes(10);

  /** The part of a released file's name that says it was given back once already. */
  private static final Pattern LEFT = Pattern.compile("\\.left-[0-9]+(-[0-9]+)*$");

  /** {@code WEIR_SNAPSHOT_DIR} (Weir only): the directory, unset for no snapshots. */
  public static final EnvVar VARIABLE = EnvVar.of("WEIR_SNAPSHOT_DIR");

  private final Path dir;
  private final String self;
  private final PeerInputValidator validator;
  private final Clock clock;
  private Reader reader = SnapshotFile::read;

  /** A reader of one snapshot file: {@link SnapshotFile#read} unless a test sets another. */
  @FunctionalInterface
  interface Reader {
    /** Reads {@code file} as {@link SnapshotFile#read} does. */
    SnapshotFile.Header read(
        Path file, PeerInputValidator validator, long now, Consumer<BucketSnapshot> sink)
        throws IOException, SnapshotFile.Invalid;
  }

  /**
   * Creates the snapshot directory {@code dir} of the node advertised as {@code self}, checking the
   * buckets it loads with {@code validator} at {@code clock}'s time.
   */
  public SnapshotDirectory(Path dir, String self, PeerInputValidator validator, Clock clock) {
    this.dir = Objects.requireNonNull(dir, "dir");
    this.self = Objects.requireNonNull(self, "self");
    this.validator = Objects.requireNonNull(validator, "validator");
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /** Sets the reader of each claimed file; for tests that make a read fail. */
  void readWith(Reader reader) {
    this.reader = Objects.requireNonNull(reader, "reader");
  }

  /** Returns the directory. */
  public Path dir() {
    return dir;
  }

  /**
   * Returns the file this node writes: its address with every character but {@code [A-Za-z0-9.-]}
   * as {@code _}, and {@link #SUFFIX}.
   */
  public Path ownFile() {
    return dir.resolve(fileName(self));
  }

  /** Returns the file name of the snapshot of the node advertised as {@code address}. */
  public static String fileName(String address) {
    return address.replaceAll("[^A-Za-z0-9.-]", "_") + SUFFIX;
  }

  /**
   * Writes the live buckets of {@code store} (stand-ins excluded) to this node's file, replacing it
   * atomically; returns how many it wrote. A bucket that fails the check a loading node makes
   * ({@link PeerInputValidator#checkSnapshot}, e.g. a window started more than the allowed skew
   * ahead because a client sent such a {@code created_at}) is left out and logged at WARN, since
   * one such bucket would make the loading node refuse the whole file. A missing directory is
   * created, with its missing parents, entered by its owner only ({@code 0700}), and the file is
   * readable by its owner only ({@code 0600}), on a file system with POSIX permissions; a directory
   * that exists keeps its mode.
   *
   * <p>A thread interrupted before the call (a stop cut short) still writes the file, and stays
   * interrupted: file channels fail at once on an interrupted thread, so the interrupt is set aside
   * for the write. An interrupt that arrives during the write is not covered: it may fail the
   * write, leaving the previous file intact.
   *
   * @throws IOException when the directory or the file cannot be written (the previous file, if
   *     any, is then intact)
   */
  public int save(BucketStore store) throws IOException {
    return uninterrupted(() -> write(store));
  }

  private int write(BucketStore store) throws IOException {
    createDirectory();
    Path target = ownFile();
    Path temp = dir.resolve(target.getFileName() + TEMPORARY);
    long now = clock.wallMillis();
    int[] leftOut = new int[1];
    String[] firstLeftOut = new String[1];
    int written;
    try {
      written =
          SnapshotFile.write(
              temp,
              self,
              now,
              sink ->
                  store.forEach(
                      (key, state) -> {
                        if (state.expireAt() <= now || StandInKeys.isStandIn(key)) {
                          return;
                        }
                        BucketSnapshot bucket = PeerProtos.toSnapshot(key, state);
                        Optional<String> error = validator.checkSnapshot(bucket, now);
                        if (error.isPresent()) {
                          if (leftOut[0]++ == 0) {
                            firstLeftOut[0] = "'" + key + "': " + error.get();
                          }
                          return;
                        }
                        sink.accept(bucket);
                      }));
      move(temp, target);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(temp);
      throw e;
    }
    forceDirectory();
    if (leftOut[0] > 0) {
      LOG.warn(
          "snapshot {}: {} buckets left out, a loading node would refuse the whole file for them"
              + " (the first, {})",
          target,
          leftOut[0],
          firstLeftOut[0]);
    }
    return written;
  }

  /**
   * Creates the directory and its missing parents, each entered by its owner only ({@code 0700}) on
   * a file system with POSIX permissions; a directory that exists keeps its mode.
   */
  private void createDirectory() throws IOException {
    if (Files.isDirectory(dir)) {
      return;
    }
    if (dir.getFileSystem().supportedFileAttributeViews().contains("posix")) {
      Files.createDirectories(
          dir,
          PosixFilePermissions.asFileAttribute(
              EnumSet.of(
                  PosixFilePermission.OWNER_READ,
                  PosixFilePermission.OWNER_WRITE,
                  PosixFilePermission.OWNER_EXECUTE)));
    } else {
      Files.createDirectories(dir);
    }
  }

  /**
   * Creates the directory when it is missing (owner only, as {@link #save} does) and returns what
   * keeps this node from saving its snapshot there (not a directory, cannot be created, not
   * writable), naming {@code WEIR_SNAPSHOT_DIR} and the path, or empty when nothing does; a node
   * checks at start so that the operator learns it then, not at the stop that cannot write.
   */
  public Optional<String> check() {
    String setting = VARIABLE.name() + "='" + dir + "'";
    if (Files.exists(dir) && !Files.isDirectory(dir)) {
      return Optional.of(setting + " is not a directory; snapshots cannot be saved there");
    }
    try {
      createDirectory();
    } catch (IOException e) {
      return Optional.of(
          setting + ": cannot create the directory (" + e + "); snapshots cannot be saved there");
    }
    if (!Files.isWritable(dir)) {
      return Optional.of(
          setting + " is not writable by this process; snapshots cannot be saved there");
    }
    return Optional.empty();
  }

  /**
   * Claims every snapshot file in the directory, checks each whole and passes the buckets of the
   * valid ones to {@code sink} (expired ones included: the receiver drops them); returns what it
   * found. A missing directory holds nothing.
   */
  public Loaded load(Consumer<BucketSnapshot> sink) {
    return load(sink, () -> Long.MAX_VALUE);
  }

  /**
   * Claims the snapshot files in the directory, this node's own first, then the others in name
   * order, checks each whole and passes the buckets of the valid ones to {@code sink} (expired ones
   * included: the receiver drops them); returns what it found. Files are claimed until one was
   * loaded; each one after that only when its buckets live at this node's clock are no more than
   * {@code room} says the loading node's cache holds, asked just before it is claimed (expired
   * buckets do not count, so a file that has none live is always claimed, and consumed). A file
   * whose header declares no more buckets than that room is claimed on its header alone;
   * otherwise its records are read up to one past the room, each parsed for its expiry: all of
   * them when most have expired, at worst one more read of the file than loading it takes. The
   * files it leaves stay for the nodes that start after it ({@link Loaded#left()}). A missing
   * directory holds nothing. A thread interrupted before the call reads the files all the same and
   * stays interrupted, as {@link #save} does; an interrupt that arrives during the read is not
   * covered.
   */
  public Loaded load(Consumer<BucketSnapshot> sink, LongSupplier room) {
    return uninterrupted(() -> read(sink, room));
  }

  /**
   * Returns what {@code io} returns, run with the calling thread's interrupt status cleared and set
   * again afterwards when it was set: a file channel used on an interrupted thread closes and
   * fails at once ({@link java.nio.channels.ClosedByInterruptException}). Only an interrupt set
   * before the call is set aside; one that arrives while {@code io} runs can still fail it.
   */
  private static <T, E extends Exception> T uninterrupted(Io<T, E> io) throws E {
    boolean interrupted = Thread.interrupted();
    try {
      return io.run();
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** File work that returns a {@code T} or throws an {@code E}. */
  @FunctionalInterface
  private interface Io<T, E extends Exception> {
    T run() throws E;
  }

  private Loaded read(Consumer<BucketSnapshot> sink, LongSupplier room) {
    Loaded loaded = new Loaded();
    if (!Files.isDirectory(dir)) {
      return loaded;
    }
    List<Path> files;
    try {
      releaseLeftClaims(list("*" + SUFFIX + CLAIMED + "*"));
      removeAbandoned(list("*" + SUFFIX + TEMPORARY));
      files = list("*" + SUFFIX);
    } catch (IOException e) {
      LOG.error("cannot list the snapshot directory {}: {}; no snapshot loaded", dir, e.toString());
      return loaded;
    }
    Path own = ownFile();
    if (files.remove(own)) {
      files.add(0, own);
    }
    for (Path file : files) {
      if (!loaded.files.isEmpty() && !fits(file, Math.max(0, room.getAsLong()))) {
        loaded.left.add(file);
        continue;
      }
      Path claimed = unusedName(file.getFileName() + CLAIMED + "-" + clock.wallMillis(), "");
      try {
        markClaimTime(file);
        move(file, claimed);
      } catch (NoSuchFileException e) {
        continue;
      } catch (IOException e) {
        LOG.error("cannot claim snapshot {}: {}; not loaded", file, e.toString());
        continue;
      }
      loadClaimed(file, claimed, sink, loaded);
    }
    return loaded;
  }

  // Whether the buckets of file live now are at most room: the header's count when that is no more
  // than room, else the records are read. A file that cannot be read or fails a check fits (it is
  // then claimed and set aside whole, or was claimed by another node meanwhile).
  private boolean fits(Path file, long room) {
    long now = clock.wallMillis();
    try {
      return SnapshotFile.readHeader(file, validator, now).buckets() <= room
          || SnapshotFile.liveBuckets(file, validator, now, room) <= room;
    } catch (IOException | SnapshotFile.Invalid e) {
      return true;
    }
  }

  private List<Path> list(String glob) throws IOException {
    List<Path> files = new ArrayList<>();
    try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir, glob)) {
      stream.forEach(files::add);
    }
    files.sort(null);
    return files;
  }

  /**
   * Gives back, under a new snapshot name, each claimed file left by a start that did not finish
   * loading it (killed, or the read failed), once it has been claimed for {@link #OWN_STALE_CLAIM}
   * when it is this node's own file, {@link #STALE_CLAIM} when another node's (a node still loading
   * it is left alone; loading one file takes seconds). A new name, so that it replaces no snapshot
   * written since; a file given back once already is set aside as {@code .rejected} instead.
   */
  private void releaseLeftClaims(List<Path> claims) {
    String own = ownFile().getFileName().toString();
    long now = clock.wallMillis();
    for (Path claimed : claims) {
      Matcher claim = CLAIM.matcher(claimed.getFileName().toString());
      if (!claim.matches()) {
        continue;
      }
      String snapshot = claim.group(1);
      long claimedAt;
      try {
        claimedAt = Files.getLastModifiedTime(claimed).toMillis();
      } catch (IOException e) {
        continue;
      }
      Duration stale = snapshot.equals(own) ? OWN_STALE_CLAIM : STALE_CLAIM;
      if (now - claimedAt < stale.toMillis()) {
        LOG.warn(
            "snapshot {} is claimed by another start since {}; not loaded here (a start after {}"
                + " loads it if it is still claimed then)",
            claimed,
            Instant.ofEpochMilli(claimedAt),
            Instant.ofEpochMilli(claimedAt + stale.toMillis()));
        continue;
      }
      String base = snapshot.substring(0, snapshot.length() - SUFFIX.length());
      boolean again = LEFT.matcher(base).find();
      Path released =
          again
              ? unusedName(snapshot, REJECTED)
              : unusedName(base + ".left-" + now, SUFFIX);
      try {
        move(claimed, released);
        if (again) {
          LOG.error(
              "snapshot {} was left claimed again by a start that did not finish loading it;"
                  + " set aside as {}, none of its buckets used",
              claimed,
              released.getFileName());
        } else {
          LOG.warn(
              "snapshot {} was left claimed by a start that did not finish loading it; loading it"
                  + " as {}",
              claimed,
              released.getFileName());
        }
      } catch (IOException e) {
        // Another start released it first, or it cannot be renamed: left as it is.
        LOG.debug("cannot release left claim {}: {}", claimed, e.toString());
      }
    }
  }

  /**
   * Removes each temporary file a save left when it was cut short (the process killed while it
   * wrote), once it has not changed for {@link #STALE_TEMPORARY}: a node still writing its file is
   * left alone, and the files of addresses that never come back do not fill the volume. One that
   * cannot be removed is named in a WARN, once per file at each start.
   */
  private void removeAbandoned(List<Path> temporaries) {
    long now = clock.wallMillis();
    for (Path temp : temporaries) {
      try {
        long modified = Files.getLastModifiedTime(temp, LinkOption.NOFOLLOW_LINKS).toMillis();
        if (now - modified < STALE_TEMPORARY.toMillis()) {
          continue;
        }
        Files.deleteIfExists(temp);
        LOG.warn(
            "removed {}, left by a snapshot write that did not finish (last changed at {}); the"
                + " buckets it held are lost",
            temp,
            Instant.ofEpochMilli(modified));
      } catch (IOException e) {
        LOG.warn(
            "cannot remove {}, left by a snapshot write that did not finish: {}; delete it, or it"
                + " keeps its space",
            temp,
            e.toString());
      }
    }
  }

  // The claim time goes on the file before it is claimed, so that the claim carries it from the
  // moment it appears; a file that cannot take it is claimed anyway (its write time then stands).
  private void markClaimTime(Path file) throws NoSuchFileException {
    try {
      Files.setLastModifiedTime(file, FileTime.fromMillis(clock.wallMillis()));
    } catch (NoSuchFileException e) {
      throw e;
    } catch (IOException e) {
      LOG.debug("cannot mark the claim time of {}: {}", file, e.toString());
    }
  }

  private void loadClaimed(Path file, Path claimed, Consumer<BucketSnapshot> sink, Loaded loaded) {
    int before = loaded.buckets;
    try {
      SnapshotFile.Header header =
          reader.read(
              claimed,
              validator,
              clock.wallMillis(),
              b -> {
                loaded.buckets++;
                sink.accept(b);
              });
      loaded.files.add(file);
      LOG.info(
          "loaded snapshot {}: {} buckets written by {} at {}",
          file,
          header.buckets(),
          header.writer(),
          Instant.ofEpochMilli(header.writtenAt()));
    } catch (SnapshotFile.Invalid | IOException e) {
      if (loaded.buckets == before) {
        setAside(file, claimed, e, loaded);
        return;
      }
      loaded.files.add(file);
      if (e instanceof IOException) {
        LOG.error(
            "snapshot {} partly loaded: {} buckets passed on before the read failed: {}; kept"
                + " claimed as {}, so that a later start loads the rest (the buckets passed on"
                + " merge again with no effect)",
            file,
            loaded.buckets - before,
            e.toString(),
            claimed.getFileName());
        return;
      }
      LOG.error(
          "snapshot {} partly loaded: {} buckets passed on before the read failed: {}; the file"
              + " fails a check, so it is deleted and the rest are lost",
          file,
          loaded.buckets - before,
          e.getMessage());
    }
    try {
      Files.deleteIfExists(claimed);
    } catch (IOException e) {
      LOG.error(
          "loaded snapshot {} but cannot delete it as {}: {}; delete it, or a later start loads"
              + " it again",
          file,
          claimed.getFileName(),
          e.toString());
    }
  }

  // A file none of whose buckets were passed on: one that fails a check is kept as .rejected, one
  // that cannot be read stays claimed, for a later start.
  private void setAside(Path file, Path claimed, Exception e, Loaded loaded) {
    loaded.rejected.add(file);
    if (e instanceof IOException) {
      LOG.error("snapshot {} ignored: cannot read it: {}", file, e.toString());
      return;
    }
    Path rejected = unusedName(file.getFileName().toString(), REJECTED);
    LOG.error(
        "snapshot {} ignored, none of its buckets used: {}; kept as {}",
        file,
        e.getMessage(),
        rejected.getFileName());
    try {
      move(claimed, rejected);
    } catch (IOException moveFailed) {
      LOG.warn("cannot rename {} to {}: {}", claimed, rejected, moveFailed.toString());
    }
  }

  /**
   * Returns the path in the directory named {@code stem + end}, or {@code stem-<n> + end} with the
   * smallest {@code n} from 1 that names no file yet; a rename onto it replaces nothing unless a
   * file of that name appears meanwhile.
   */
  private Path unusedName(String stem, String end) {
    Path path = dir.resolve(stem + end);
    for (int n = 1; Files.exists(path, LinkOption.NOFOLLOW_LINKS); n++) {
      path = dir.resolve(stem + "-" + n + end);
    }
    return path;
  }

  private static void move(Path from, Path to) throws IOException {
    try {
      Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (AtomicMoveNotSupportedException e) {
      Files.move(from, to, StandardCopyOption.REPLACE_EXISTING);
    }
  }

  // Forces the directory entry of the rename to disk; some file systems cannot open a directory.
  private void forceDirectory() {
    try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
      channel.force(true);
    } catch (IOException e) {
      LOG.debug("cannot force the snapshot directory {}: {}", dir, e.toString());
    }
  }

  /**
   * What {@link #load} found: the files whose buckets it passed on, the files it ignored and the
   * files it left for other nodes.
   */
  public static final class Loaded {
    private final List<Path> files = new ArrayList<>();
    private final List<Path> rejected = new ArrayList<>();
    private final List<Path> left = new ArrayList<>();
    private int buckets;

    /**
     * Returns the files whose buckets were passed on: all of them, or some when the read failed
     * midway (logged at ERROR as partly loaded).
     */
    public List<Path> files() {
      return List.copyOf(files);
    }

    /** Returns the files ignored (each logged with what is wrong). */
    public List<Path> rejected() {
      return List.copyOf(rejected);
    }

    /** Returns the files left unclaimed because the loading node's cache has no room for them. */
    public List<Path> left() {
      return List.copyOf(left);
    }

    /** Returns how many buckets were passed on. */
    public int bucketCount() {
      return buckets;
    }
  }
}
