package dev.weir.envoy.config;

import java.util.Set;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.nodes.Tag;
import org.yaml.snakeyaml.resolver.Resolver;

/**
 * A SnakeYAML {@link Resolver} that reads plain scalars as booleans exactly where gopkg.in/yaml.v2
 * (v2.4.0, envoyproxy/ratelimit's YAML library) does: its YAML 1.1 list adds {@code y}, {@code Y},
 * {@code n} and {@code N} to SnakeYAML's {@code yes/no/true/false/on/off} in three cases. Integers
 * also take the base prefixes yaml.v2 takes through Go's {@code strconv.ParseInt(s, 0, 64)}, in
 * either case ({@code 0o144}, {@code 0O144}, {@code 0X64}, {@code 0B1100100}), besides SnakeYAML's
 * {@code 0x}, {@code 0b} and leading-{@code 0} octal. Every other type resolves as in SnakeYAML's
 * default.
 *
 * <p>Used to read descriptor files and to write the YAML of an xDS config, so that a string such as
 * {@code y} is written in quotes, as yaml.v2 writes it, and read back as the same string.
 */
public final class YamlV2Resolver extends Resolver {

  /** The plain scalars yaml.v2 reads as {@code true}. */
  private static final Set<String> TRUE =
      Set.of("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON");

  /** The plain scalars yaml.v2 reads as booleans, {@code true} or {@code false}. */
  static final Pattern BOOL =
      Pattern.compile(
          "^(?:y|Y|yes|Yes|YES|true|True|TRUE|on|On|ON"
              + "|n|N|no|No|NO|false|False|FALSE|off|Off|OFF)$");

  /**
   * The plain scalars with a base prefix ({@code 0o}, {@code 0x}, {@code 0b}, in either case) that
   * yaml.v2 reads as integers: an optional sign, the prefix and at least one digit of its base,
   * with {@code _} anywhere after the first character (yaml.v2 removes every {@code _} before
   * parsing).
   */
  static final Pattern PREFIXED_INT =
      Pattern.compile(
          "^(?:[-+]_*)?0_*(?:[oO]_*[0-7][0-7_]*|[xX]_*[0-9a-fA-F][0-9a-fA-F_]*|[bB]_*[01][01_]*)$");

  @Override
  protected void addImplicitResolvers() {
    // First, so that they decide before SnakeYAML's narrower boolean and integer patterns.
    addImplicitResolver(Tag.BOOL, BOOL, "yYnNtTfFoO");
    addImplicitResolver(Tag.INT, PREFIXED_INT, "-+0");
    super.addImplicitResolvers();
  }

  /** Whether {@code text}, a scalar this resolver tagged {@code !!bool}, is {@code true}. */
  static boolean isTrue(String text) {
    return TRUE.contains(text);
  }
}
