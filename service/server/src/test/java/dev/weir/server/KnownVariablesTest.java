package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.config.EnvVar;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class KnownVariablesTest {

  private static final Pattern LITERAL =
      Pattern.compile("EnvVar\\.of\\(\\s*\"([A-Z0-9_]+)\"(?:\\s*,\\s*\"([A-Z0-9_]+)\")?\\s*\\)");

  /**
   * The files that use {@code EnvVar} without declaring settings of their own, and those of the
   * {@code ratelimit} command, which read envoyproxy/ratelimit's variables (documented in
   * docs/migrating-from-ratelimit.md, checked by {@link ReferenceEnvironmentTest}).
   */
  private static final Set<String> NOT_DECLARING =
      Set.of(
          "EnvVar.java",
          "DiscoveryEnv.java",
          "RatelimitSettings.java",
          "ReferenceEnvironment.java",
          "TracingSettings.java");

  private static List<Path> mainSources() throws IOException {
    return RepoRoot.mainJavaSources();
  }

  private static Set<String> knownNames() {
    Set<String> names = new java.util.TreeSet<>();
    for (EnvVar variable : KnownVariables.all()) {
      names.add(variable.name());
      variable.aliasName().ifPresent(names::add);
    }
    return names;
  }

  @Test
  void all_everyEnvVarLiteralInTheSources_known() throws IOException {
    List<String> declared = new ArrayList<>();
    for (Path file : mainSources()) {
      if (NOT_DECLARING.contains(file.getFileName().toString())) {
        continue;
      }
      Matcher m = LITERAL.matcher(Files.readString(file));
      while (m.find()) {
        declared.add(m.group(1));
        if (m.group(2) != null) {
          declared.add(m.group(2));
        }
      }
    }

    assertThat(declared).hasSizeGreaterThan(50);
    assertThat(knownNames()).containsAll(declared);
  }

  @Test
  void declaringClasses_everyFileDeclaringAnEnvVarIsListed() throws IOException {
    Set<String> listed =
        KnownVariables.DECLARING_CLASSES.stream()
            .map(c -> c.getSimpleName() + ".java")
            .collect(Collectors.toSet());
    List<String> declaring = new ArrayList<>();
    for (Path file : mainSources()) {
      String text = Files.readString(file);
      String name = file.getFileName().toString();
      if ((text.contains("EnvVar.of(") || text.contains("new EnvVar("))
          && !NOT_DECLARING.contains(name)) {
        declaring.add(name);
      }
    }

    assertThat(listed).containsAll(declaring);
  }

  @Test
  void all_includesDiscoveryVariablesWithTheirGubernatorAliases() {
    assertThat(KnownVariables.all())
        .contains(
            EnvVar.of("WEIR_ETCD_ENDPOINTS", "GUBER_ETCD_ENDPOINTS"),
            EnvVar.of("WEIR_DATA_CENTER", "GUBER_DATA_CENTER"),
            EnvVar.of("WEIR_DNS_POLL_INTERVAL", "GUBER_DNS_POLL_INTERVAL"),
            EnvVar.of("WEIR_HTTP_MAX_IN_FLIGHT", "WEIR_HTTP_MAX_QUEUE"),
            EnvVar.of("GUBER_GRACEFUL_TERMINATION_DELAY_SEC"),
            EnvVar.of("WEIR_TLS_AUTO_CA_FILE"),
            EnvVar.of("WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG"));
  }

  @Test
  void serveHelp_namesOnlyKnownVariables() {
    Matcher m = Pattern.compile("\\b(WEIR|GUBER)_[A-Z0-9_]*[A-Z0-9]\\b").matcher(ServeCommand.HELP);
    List<String> named = new ArrayList<>();
    while (m.find()) {
      named.add(m.group());
    }

    assertThat(named).isNotEmpty();
    assertThat(knownNames()).containsAll(named);
  }
}
