package dev.weir.core.config;

import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * The settings a node was started with, as one log line: every {@code WEIR_*} and {@code GUBER_*}
 * variable that is set, sorted, with the values of secrets replaced by {@value #MASK}.
 *
 * <p>A variable is a secret when its name mentions a password, secret, token or credential, or
 * ends in {@code _KEY} (TLS and CA keys) or {@code _HEADERS} (headers sent to a server, such as an
 * {@code authorization} header); their values never reach the log. A name with {@code KEY} inside
 * it, such as {@code WEIR_ETCD_KEY_PREFIX}, is no secret. Given the known variables, an unknown one
 * whose closest known name is a secret, such as a misspelled {@code WEIR_ETCD_PASWORD}, is masked
 * too.
 */
public final class EffectiveSettings {

  /** What a secret's value is replaced with. */
  public static final String MASK = "****";

  private static final Pattern SECRET =
      Pattern.compile(".*(PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|_KEY$|_HEADERS$).*");

  private EffectiveSettings() {}

  /** Returns whether the variable {@code name} holds a secret. */
  public static boolean isSecret(String name) {
    return SECRET.matcher(name.toUpperCase(Locale.ROOT)).matches();
  }

  /** Returns {@code WEIR_A=1 WEIR_ETCD_PASSWORD=**** ...} for the set Weir and Gubernator variables. */
  public static String describe(Map<String, String> env) {
    return describe(env, Set.of());
  }

  /**
   * Returns the line as {@link #describe(Map)} does, also masking each variable that {@code known}
   * does not know but whose closest known name is a secret, such as a misspelled {@code
   * WEIR_ETCD_PASWORD}.
   */
  public static String describe(Map<String, String> env, UnknownVariables known) {
    Set<String> misspelledSecrets = new HashSet<>();
    for (UnknownVariables.Unknown unknown : known.find(env.keySet())) {
      if (unknown.closest().filter(EffectiveSettings::isSecret).isPresent()) {
        misspelledSecrets.add(unknown.name());
      }
    }
    return describe(env, misspelledSecrets);
  }

  private static String describe(Map<String, String> env, Set<String> alsoSecret) {
    Map<String, String> sorted = new TreeMap<>();
    env.forEach(
        (name, value) -> {
          if ((name.startsWith("WEIR_") || name.startsWith("GUBER_"))
              && value != null
              && !value.isBlank()) {
            boolean secret = isSecret(name) || alsoSecret.contains(name);
            sorted.put(name, secret ? MASK : oneLine(value.trim()));
          }
        });
    StringBuilder line = new StringBuilder();
    sorted.forEach(
        (name, value) -> {
          if (line.length() > 0) {
            line.append(' ');
          }
          line.append(name).append('=').append(value);
        });
    return line.toString();
  }

  private static String oneLine(String value) {
    return value.replace("\r", "\\r").replace("\n", "\\n");
  }
}
