package dev.weir.envoy.config;

import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.TreeSet;

/**
 * The refusal of a descriptor configuration that declares no domain: it would answer OK to every
 * request, so a node does not start with it unless {@code
 * WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG=true}, and a reload to it (from files, or an xDS set
 * once domains have loaded) keeps the last good one.
 */
public final class NoDomainLoaded {

  /** The variable that lets a node start without a domain. */
  public static final String FORCE_START = "WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG";

  private static final int MAX_NAMES_SHOWN = 5;

  /**
   * The variables the refusal names, as the node's mode lets the user set them.
   *
   * @param config the setting (or settings) that gave the config path
   * @param forceStart the variable that lets a node start without a domain
   * @param keyPrefix where the key prefix of the files read comes from and what else picks the
   *     files, shown after the example file name; empty when no setting gives a prefix
   */
  public record Variables(String config, String forceStart, String keyPrefix) {

    /** The {@code WEIR_*} names of {@code weir.jar serve}. */
    public static final Variables WEIR = new Variables("WEIR_ENVOY_CONFIG", FORCE_START);

    /** Creates the names. */
    public Variables {
      Objects.requireNonNull(config, "config");
      Objects.requireNonNull(forceStart, "forceStart");
      Objects.requireNonNull(keyPrefix, "keyPrefix");
    }

    /** Creates the names of a mode where no setting gives a key prefix. */
    public Variables(String config, String forceStart) {
      this(config, forceStart, "");
    }
  }

  private NoDomainLoaded() {}

  /**
   * Returns the error for {@code path}, which loaded no domain, naming the {@code WEIR_*}
   * variables: what it holds and how to opt in to starting without a domain.
   */
  public static DescriptorConfigException at(Path path) {
    return at(path, Variables.WEIR);
  }

  /**
   * Returns the error for {@code path}, which loaded no domain, naming {@code variables}: what it
   * holds and how to opt in to starting without a domain.
   */
  public static DescriptorConfigException at(Path path, Variables variables) {
    return at(path, "", variables);
  }

  /**
   * Returns the error for {@code path}, read for files whose key starts with {@code keyPrefix},
   * which loaded no domain, naming {@code variables}: what it holds and how to opt in to starting
   * without a domain.
   */
  public static DescriptorConfigException at(Path path, String keyPrefix, Variables variables) {
    String found;
    try {
      found = found(ConfigFiles.list(path, keyPrefix), keyPrefix);
    } catch (DescriptorConfigException e) {
      found = e.getMessage();
    }
    return new DescriptorConfigException(
        path
            + ": no rate limit domain loaded ("
            + variables.config()
            + "), so every request would be allowed: "
            + found
            + ". Add a descriptor file ("
            + (keyPrefix.isEmpty()
                ? "any name not starting with '.'"
                : "a path below it starting with '"
                    + keyPrefix
                    + "' once '/' is read as '.', e.g. "
                    + keyPrefix
                    + "yaml"
                    + (variables.keyPrefix().isEmpty() ? "" : "; " + variables.keyPrefix()))
            + "), or set "
            + variables.forceStart()
            + "=true to start without one (the node then reports not ready until a config with a"
            + " domain loads)");
  }

  /** Describes what a walk that read no domain found. */
  private static String found(ConfigFiles.Listing listing, String keyPrefix) {
    if (!listing.files().isEmpty()) {
      return "found " + listing.files().size() + " file(s)";
    }
    List<String> skipped = listing.skipped();
    String none =
        keyPrefix.isEmpty()
            ? "found no file to load"
            : "found no file whose path starts with '" + keyPrefix + "'";
    if (skipped.isEmpty()) {
      return keyPrefix.isEmpty() ? "the directory is empty" : none;
    }
    return none
        + ", only skipped entries ("
        + shown(skipped)
        + "; names starting with '.'"
        + (keyPrefix.isEmpty() ? "" : ", and paths not starting with '" + keyPrefix + "',")
        + " are skipped)";
  }

  /**
   * Returns the refusal of an xDS set without a domain while the domains {@code loaded} are in use:
   * loading it would switch off the limits of every one of them.
   */
  public static DescriptorConfigException xdsSetWithout(Collection<String> loaded) {
    return new DescriptorConfigException(
        "the set holds no RateLimitConfig resource, and loading it would switch off the limits"
            + " of every domain loaded ("
            + shown(List.copyOf(new TreeSet<>(loaded)))
            + "); a set must keep at least one domain (restart the node to clear them all)");
  }

  /** Returns the first {@link #MAX_NAMES_SHOWN} of {@code names}, and how many more there are. */
  private static String shown(List<String> names) {
    String shown = String.join(", ", names.subList(0, Math.min(MAX_NAMES_SHOWN, names.size())));
    if (names.size() > MAX_NAMES_SHOWN) {
      shown += " and " + (names.size() - MAX_NAMES_SHOWN) + " more";
    }
    return shown;
  }
}
