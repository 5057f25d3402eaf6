package dev.weir.e2e.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.config.EnvFile;
import dev.weir.core.config.EnvVar;
import dev.weir.e2e.envoy.RepoFiles;
import dev.weir.server.KnownVariables;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

/**
 * Every environment variable the server reads is documented in exactly one table row of the
 * repository's Markdown (README.md's configuration tables), every documented variable exists, and
 * docs/weir.env.example names each one, commented out, at the default its row gives.
 */
class DocumentedVariablesTest {

  private static final Pattern NAME = Pattern.compile("`((?:WEIR|GUBER)_[A-Z0-9_]+)`");

  private final List<MarkdownTables.Row> rows = MarkdownTables.rows(RepoFiles.root());

  /** Rows whose first cell is one variable name, by that name. */
  private Map<String, List<MarkdownTables.Row>> variableRows() {
    Map<String, List<MarkdownTables.Row>> byName = new HashMap<>();
    for (MarkdownTables.Row row : rows) {
      Matcher m = NAME.matcher(row.cell(0));
      if (m.matches()) {
        byName.computeIfAbsent(m.group(1), n -> new ArrayList<>()).add(row);
      }
    }
    return byName;
  }

  private static List<String> names(String cell) {
    List<String> names = new ArrayList<>();
    Matcher m = NAME.matcher(cell);
    while (m.find()) {
      names.add(m.group(1));
    }
    return names;
  }

  @Test
  void everyVariableInTheCode_documentedInExactlyOneTableRow() {
    Map<String, List<MarkdownTables.Row>> byName = variableRows();
    SoftAssertions softly = new SoftAssertions();
    for (EnvVar variable : KnownVariables.all()) {
      if (variable.name().startsWith("WEIR_")) {
        List<MarkdownTables.Row> documented = byName.getOrDefault(variable.name(), List.of());
        softly
            .assertThat(documented)
            .as("table rows documenting %s (one in README.md's configuration)", variable.name())
            .hasSize(1);
        if (documented.size() == 1 && variable.alias() != null) {
          softly
              .assertThat(names(documented.get(0).cell(1)))
              .as("alias column of %s at %s", variable.name(), documented.get(0))
              .contains(variable.alias());
        }
      } else {
        List<MarkdownTables.Row> asAlias =
            byName.values().stream()
                .flatMap(List::stream)
                .filter(row -> names(row.cell(1)).contains(variable.name()))
                .toList();
        softly.assertThat(asAlias).as("rows naming %s as an alias", variable.name()).hasSize(1);
      }
    }
    softly.assertAll();
  }

  @Test
  void everyDocumentedVariable_readByTheServer() {
    List<String> known = new ArrayList<>();
    KnownVariables.all()
        .forEach(
            v -> {
              known.add(v.name());
              v.aliasName().ifPresent(known::add);
            });

    assertThat(variableRows().keySet()).isSubsetOf(known);
  }

  @Test
  void envExample_everyLineCommentedOutAndEveryVariableAtItsDocumentedDefault() throws IOException {
    Path example = RepoFiles.root().resolve("docs/weir.env.example");
    List<String> lines = Files.readAllLines(example);
    Map<String, List<MarkdownTables.Row>> byName = variableRows();
    Pattern setting = Pattern.compile("# ((?:WEIR|GUBER)_[A-Z0-9_]+)=(.*)");
    List<String> named = new ArrayList<>();
    SoftAssertions softly = new SoftAssertions();
    for (String line : lines) {
      softly.assertThat(line).as("every line is blank or a comment").matches("|#.*");
      Matcher m = setting.matcher(line);
      if (m.matches()) {
        named.add(m.group(1));
        String value = m.group(2);
        List<MarkdownTables.Row> row = byName.getOrDefault(m.group(1), List.of());
        if (!value.isEmpty() && row.size() == 1) {
          softly
              .assertThat(row.get(0).cell(2))
              .as("default of %s in %s", m.group(1), row.get(0))
              .startsWith("`" + value + "`");
        }
      }
    }
    List<String> expected =
        KnownVariables.all().stream()
            .map(EnvVar::name)
            .filter(name -> name.startsWith("WEIR_"))
            .toList();

    softly.assertThat(named).containsExactlyInAnyOrderElementsOf(expected);
    softly.assertThat(EnvFile.parse(example.toString(), lines)).isEmpty();
    softly.assertAll();
  }
}
