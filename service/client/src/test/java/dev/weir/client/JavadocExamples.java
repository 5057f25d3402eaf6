package dev.weir.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Checks that every {@code <pre>{@code ...}</pre>} example in a source file's Javadoc appears, line
 * for line (indentation aside), in a test source, so the examples users read are code that compiles
 * and runs.
 */
final class JavadocExamples {

  private static final Pattern PRE =
      Pattern.compile("<pre>\\{@code\\n(.*?)\\n \\* }</pre>", Pattern.DOTALL);

  private JavadocExamples() {}

  /** Returns the examples in {@code source}'s Javadoc, one list of trimmed lines each. */
  static List<List<String>> examples(Path source) throws IOException {
    Matcher m = PRE.matcher(Files.readString(source));
    List<List<String>> out = new ArrayList<>();
    while (m.find()) {
      out.add(
          m.group(1)
              .lines()
              .map(line -> line.replaceFirst("^\\s*\\* ?", "").strip())
              .filter(line -> !line.isEmpty())
              .toList());
    }
    return out;
  }

  /** Asserts that {@code source} has examples and that each is in {@code test}, in order. */
  static void assertAllIn(Path source, Path test) throws IOException {
    List<List<String>> examples = examples(source);
    assertThat(examples).as("examples in %s", source).isNotEmpty();
    for (List<String> example : examples) {
      assertIn(example, test);
    }
  }

  /**
   * Asserts that {@code example}'s lines appear in {@code file} one after another, each compared
   * stripped and blank lines left out.
   */
  static void assertIn(List<String> example, Path file) throws IOException {
    List<String> fileLines =
        Files.readString(file).lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
    assertThat(Collections.indexOfSubList(fileLines, example))
        .as("example in %s:%n%s", file, String.join("\n", example))
        .isNotNegative();
  }
}
