package dev.weir.e2e.docs;

import dev.weir.e2e.envoy.RepoFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** The table rows of the repository's Markdown files, each with its file, line and cells. */
final class MarkdownTables {

  /**
   * One table row.
   *
   * @param file the file, relative to the repository root
   * @param line the line number, from 1
   * @param cells the cells, trimmed
   */
  record Row(String file, int line, List<String> cells) {

    /** Returns cell {@code i}, or empty when the row has fewer cells. */
    String cell(int i) {
      return i < cells.size() ? cells.get(i) : "";
    }

    @Override
    public String toString() {
      return file + ":" + line;
    }
  }

  private MarkdownTables() {}

  /** Returns every table row of every {@code .md} file under {@code root}, outside build output. */
  static List<Row> rows(Path root) {
    List<Row> rows = new ArrayList<>();
    try {
      for (Path file :
          RepoFiles.sourceFilesUnder(root).stream().filter(MarkdownTables::isDoc).sorted().toList()) {
        List<String> lines = Files.readAllLines(file);
        for (int i = 0; i < lines.size(); i++) {
          String line = lines.get(i).trim();
          if (line.startsWith("|") && line.endsWith("|") && !line.startsWith("|---")) {
            List<String> cells =
                Arrays.stream(line.substring(1, line.length() - 1).split("\\|", -1))
                    .map(String::trim)
                    .toList();
            rows.add(new Row(root.relativize(file).toString(), i + 1, cells));
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return rows;
  }

  private static boolean isDoc(Path file) {
    return file.toString().endsWith(".md");
  }
}
