package dev.weir.server;

import dev.weir.core.config.UnknownVariables;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;

/**
 * The warnings a node starts with for each {@code WEIR_*} or {@code GUBER_*} variable, in the
 * environment or the {@code --config} file, that no setting reads: where it was set and the known
 * name closest to it, e.g. {@code WEIR_CAHCE_SIZE (in the environment) is not a Weir setting and is
 * ignored; did you mean WEIR_CACHE_SIZE?}. The variables Kubernetes' service links set in the
 * environment ({@link ServiceLinks}) get none.
 */
final class UnknownVariableWarnings {

  /** The check of every variable a node reads. */
  static final UnknownVariables KNOWN = new UnknownVariables(KnownVariables.all());

  private UnknownVariableWarnings() {}

  /**
   * Returns one warning per unknown variable of {@code environment}, but for its service links,
   * and of {@code fileValues}, read from {@code file}, sorted by name.
   */
  static List<String> of(
      Map<String, String> environment, Map<String, String> fileValues, Optional<Path> file) {
    Set<String> names = new HashSet<>(environment.keySet());
    names.removeAll(ServiceLinks.in(environment));
    names.addAll(fileValues.keySet());
    return KNOWN.find(names).stream()
        .map(
            unknown ->
                unknown.name()
                    + " ("
                    + (environment.containsKey(unknown.name())
                        ? "in the environment"
                        : "in --config " + file.map(Path::toString).orElse(""))
                    + ") is not a Weir setting and is ignored; "
                    + unknown
                        .closest()
                        .map(closest -> "did you mean " + closest + "?")
                        .orElse("README.md#configuration lists every setting"))
        .toList();
  }

  /**
   * Reports {@code warnings} once as a node starts: logged as warnings to {@code log} when its
   * level shows them, else printed to {@code err}, so that a log level of {@code error} does not
   * hide a misspelled variable. Returns the warnings {@code err} has not shown yet, to print before
   * the error should the start then fail: all of them when logged, none when printed.
   */
  static List<String> report(List<String> warnings, Logger log, PrintStream err) {
    if (log.isWarnEnabled()) {
      warnings.forEach(log::warn);
      return warnings;
    }
    warnings.forEach(err::println);
    return List.of();
  }
}
