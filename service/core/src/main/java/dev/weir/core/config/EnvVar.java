package dev.weir.core.config;

import java.util.Objects;
import java.util.Optional;

/**
 * The name of one setting: its {@code WEIR_*} variable and, optionally, the Gubernator {@code
 * GUBER_*} alias accepted for the same setting. When both are set, the {@code WEIR_*} one wins.
 *
 * @param name the {@code WEIR_*} variable
 * @param alias the Gubernator variable, or {@code null} when there is none
 */
public record EnvVar(String name, String alias) {

  /** Creates a variable name; {@code alias} may be null. */
  public EnvVar {
    Objects.requireNonNull(name, "name");
  }

  /** Returns a variable without an alias. */
  public static EnvVar of(String name) {
    return new EnvVar(name, null);
  }

  /** Returns a variable with a Gubernator alias. */
  public static EnvVar of(String name, String alias) {
    return new EnvVar(name, alias);
  }

  /** Returns this setting under the name {@code used} (one of its two names), for messages. */
  public EnvVar namedAs(String used) {
    return used.equals(name) ? this : new EnvVar(used, null);
  }

  /** Returns the alias, if any. */
  public Optional<String> aliasName() {
    return Optional.ofNullable(alias);
  }
}
