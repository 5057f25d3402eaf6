package dev.weir.envoy.config;

import java.util.Set;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.nodes.Tag;
import org.yaml.snakeyaml.resolver.Resolver;

/**
 * A SnakeYAML {@link Resolver} that reads plain scalars as booleans exactly where gopkg.in/yaml.v2
 * (v2.4.0, envoyproxy/ratelimit's YAML library) does: its YAML 1.1 list adds {@code y}, {@code Y},
 * {@code n} and {@code N} to SnakeYAML's {@code yes/no/true/false/on/off} in three cases. Every
 * other type resolves as in SnakeYAML's default.
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

  @Override
  protected void addImplicitResolvers() {
    // First, so that it decides before SnakeYAML's narrower boolean pattern.
    addImplicitResolver(Tag.BOOL, BOOL, "yYnNtTfFoO");
    super.addImplicitResolvers();
  }

  /** Whether {@code text}, a scalar this resolver tagged {@code !!bool}, is {@code true}. */
  static boolean isTrue(String text) {
    return TRUE.contains(text);
  }
}
