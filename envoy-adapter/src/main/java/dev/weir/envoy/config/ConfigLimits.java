package dev.weir.envoy.config;

/**
 * The most a descriptor configuration may hold, checked before and while it is parsed and while it
 * is compiled so that no file can exhaust the heap or the stack of a node: a refused file is a load
 * error naming the file and the limit, and a refused reload keeps the last good configuration.
 *
 * @param maxFileBytes the largest file, in bytes ({@code WEIR_ENVOY_CONFIG_MAX_FILE_SIZE}); also
 *     the most code points the YAML parser reads from one file
 * @param maxTotalBytes the most bytes all files may hold together ({@code
 *     WEIR_ENVOY_CONFIG_MAX_TOTAL_SIZE}); also sets {@link #maxCompiledChars()}
 */
public record ConfigLimits(int maxFileBytes, long maxTotalBytes) {

  /** The default largest file: 1 MiB, some 15 000 rules. */
  public static final int DEFAULT_MAX_FILE_BYTES = 1024 * 1024;

  /** The default most bytes of all files together: 16 MiB. */
  public static final long DEFAULT_MAX_TOTAL_BYTES = 16L * 1024 * 1024;

  /**
   * The most nodes the aliases of one file may add when expanded (each use of an alias counts the
   * size of what it names); a file without aliases adds none. It is what stops an alias bomb: the
   * number of aliases is not limited.
   */
  public static final int MAX_ALIAS_EXPANSION_NODES = 100_000;

  /**
   * The deepest nesting of maps and lists in one file, as written and with aliases expanded:
   * SnakeYAML's default, room for 24 levels of {@code descriptors}.
   */
  public static final int MAX_NESTING_DEPTH = 50;

  /**
   * How many characters of compiled text one load may keep per byte of {@link #maxTotalBytes}: see
   * {@link #maxCompiledChars()}.
   */
  public static final int COMPILED_CHARS_PER_TOTAL_BYTE = 2;

  /** The default limits. */
  public static final ConfigLimits DEFAULTS =
      new ConfigLimits(DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_TOTAL_BYTES);

  /** Creates limits; both must be positive. */
  public ConfigLimits {
    if (maxFileBytes <= 0 || maxTotalBytes <= 0) {
      throw new IllegalArgumentException(
          "limits must be positive: maxFileBytes="
              + maxFileBytes
              + " maxTotalBytes="
              + maxTotalBytes);
    }
  }

  /**
   * The most characters the compiled rules of one load (every file, or every xDS resource, of it)
   * may keep: each rule's path, counter name, policy names and source ({@code file:line}), twice
   * {@link #maxTotalBytes} (32 Mi by default). Each rule repeats the path of the rules it is nested
   * in, so a long key or value with many rules under it multiplies on compiling what the file
   * holds once; the budget bounds that product. An ordinary rule keeps about as many characters as
   * its YAML takes, so a config at the total size limit fits, with room for nesting.
   */
  public long maxCompiledChars() {
    return maxTotalBytes > Long.MAX_VALUE / COMPILED_CHARS_PER_TOTAL_BYTE
        ? Long.MAX_VALUE
        : maxTotalBytes * COMPILED_CHARS_PER_TOTAL_BYTE;
  }
}
