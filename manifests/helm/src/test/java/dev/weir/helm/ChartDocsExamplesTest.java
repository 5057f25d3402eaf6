package dev.weir.helm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.TemplateCommand;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The {@code helm install/upgrade/template} commands of README.md and manifests/README.md work as
 * written: each is split into arguments by a real shell (so quoting and backslashes count as they
 * would at a prompt) and its {@code --set}/{@code --set-file} values are applied to the chart by
 * Helm's library, which must render it.
 */
class ChartDocsExamplesTest {
  private static final List<String> DOCS = List.of("README.md", "manifests/README.md");

  /** The file a {@code --set-file} reads: a descriptor config with a domain of its own. */
  private static final String SAMPLE =
      "domain: docs-example\n"
          + "descriptors:\n"
          + "  - key: PATH\n"
          + "    rate_limit: {unit: minute, requests_per_unit: 7}\n";

  @Test
  void helmCommandsInTheDocs_renderAsWritten() throws Exception {
    Path bash = Path.of("/bin/bash");
    assumeTrue(Files.isExecutable(bash), "skipped: no /bin/bash to split the commands with");
    List<String> commands = new ArrayList<>();
    for (String doc : DOCS) {
      for (String command : helmCommands(Files.readString(Chart.REPO.resolve(doc)))) {
        commands.add(doc + ": " + command);
      }
    }
    assertThat(commands).as("helm install commands in " + DOCS).hasSizeGreaterThanOrEqualTo(2);

    Path dir = Files.createTempDirectory("weir-docs");
    try {
      for (String entry : commands) {
        String command = entry.substring(entry.indexOf(": ") + 2);
        List<String> args = split(bash, dir, command);
        String yaml = render(dir, entry, args);
        assertThat(yaml)
            .as("%s renders the --set-file config", entry)
            .contains("docs-example");
      }
    } finally {
      try (var files = Files.walk(dir)) {
        for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.delete(f);
        }
      }
    }
  }

  @Test
  void peerAllowedIdentitiesExample_rendersAsWritten() throws IOException {
    String readme = Files.readString(Chart.REPO.resolve("manifests/README.md"));
    Matcher m = Pattern.compile("`(peerAllowedIdentities: [^`]*)`\\s+under `tls`").matcher(readme);
    assertThat(m.find()).as("manifests/README.md's tls.peerAllowedIdentities example").isTrue();

    Rendered r =
        Chart.render("tls: {enabled: true, secretName: weir-tls, " + m.group(1) + "}\n");

    assertThat(r.env())
        .containsEntry("WEIR_PEER_ALLOWED_IDENTITIES", "*.weir-peers.weir.svc.cluster.local");
  }

  /** The {@code helm install/upgrade/template} commands of the doc's code blocks, lines joined. */
  static List<String> helmCommands(String markdown) {
    List<String> commands = new ArrayList<>();
    boolean fenced = false;
    StringBuilder current = null;
    for (String line : markdown.split("\n", -1)) {
      if (line.startsWith("```")) {
        fenced = !fenced;
        current = null;
        continue;
      }
      if (!fenced) {
        continue;
      }
      if (current == null && line.matches("\\s*helm (install|upgrade|template)\\b.*")) {
        current = new StringBuilder();
      }
      if (current != null) {
        if (line.endsWith("\\")) {
          current.append(line, 0, line.length() - 1).append(' ');
        } else {
          commands.add(current.append(line).toString().trim());
          current = null;
        }
      }
    }
    return commands;
  }

  /** The arguments bash makes of {@code command} (its words after expansion and quote removal). */
  private static List<String> split(Path bash, Path dir, String command) throws Exception {
    Process p =
        new ProcessBuilder(
                bash.toString(), "--norc", "--noprofile", "-c", "printf '%s\\0' " + command)
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .start();
    byte[] out = p.getInputStream().readAllBytes();
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as("bash on: %s", command).isZero();
    String text = new String(out, StandardCharsets.UTF_8);
    return Arrays.asList(text.substring(0, text.length() - 1).split("\0", -1));
  }

  /** Renders the chart with the command's values, as {@code helm template} would. */
  private static String render(Path dir, String entry, List<String> args) throws IOException {
    assertThat(args.subList(0, 1)).as(entry).containsExactly("helm");
    assertThat(args.get(1)).as(entry).isIn("install", "upgrade", "template");
    List<String> positional = new ArrayList<>();
    Path sample = dir.resolve("sample.yaml");
    Files.writeString(sample, SAMPLE);
    String namespace = "default";
    List<String[]> sets = new ArrayList<>();
    List<String[]> setFiles = new ArrayList<>();
    for (int i = 2; i < args.size(); i++) {
      String a = args.get(i);
      switch (a) {
        case "-n", "--namespace" -> namespace = args.get(++i);
        case "--create-namespace", "--install", "--wait", "--atomic" -> {}
        case "--set" -> {
          String[] kv = keyValue(entry, args.get(++i));
          // Helm's library escapes {}[],.= in a value (takes it literally), the CLI does not
          assertThat(kv[1])
              .as("%s: helm-java reads a --set value with {}[], unlike the CLI", entry)
              .doesNotContainPattern("[{}\\[\\],]");
          sets.add(kv);
        }
        case "--set-file" -> setFiles.add(keyValue(entry, args.get(++i)));
        default -> {
          if (a.startsWith("-")) {
            fail("%s: flag %s is unknown to this test; teach it", entry, a);
          }
          positional.add(a);
        }
      }
    }
    assertThat(positional).as("%s: release and chart", entry).hasSize(2);
    assertThat(positional.get(1)).as(entry).isEqualTo("manifests/helm/weir");
    Path chart;
    try {
      chart = Chart.copyWithoutCluster();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    TemplateCommand template =
        new Helm(chart)
            .template()
            .withKubeVersion(Chart.KUBE_VERSION)
            .withName(positional.get(0))
            .withNamespace(namespace);
    for (String[] kv : sets) {
      template.set(kv[0], kv[1]);
    }
    for (String[] kv : setFiles) {
      // the docs' file (e.g. my-limits.yaml) is the user's: the sample stands in for it
      template.setFile(kv[0], sample);
    }
    try {
      return template.call();
    } catch (RuntimeException e) {
      throw new AssertionError(entry + "\n  arguments " + args + "\n  fail: " + e.getMessage(), e);
    } finally {
      try {
        Chart.delete(chart);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  private static String[] keyValue(String entry, String arg) {
    int eq = arg.indexOf('=');
    assertThat(eq).as("%s: %s has no '='", entry, arg).isPositive();
    return new String[] {arg.substring(0, eq), arg.substring(eq + 1)};
  }
}
