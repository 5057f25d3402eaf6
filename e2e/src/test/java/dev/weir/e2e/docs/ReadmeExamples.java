package dev.weir.e2e.docs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The fenced code blocks of a Markdown file, each with the heading it sits under. */
final class ReadmeExamples {

  /**
   * One fenced block.
   *
   * @param heading the text of the nearest heading above it, without the {@code #}s
   * @param language the fence's language ({@code sh}, {@code json}), empty when none
   * @param text the block's lines, joined with newlines
   */
  record Block(String heading, String language, String text) {}

  private final List<Block> blocks;

  private ReadmeExamples(List<Block> blocks) {
    this.blocks = blocks;
  }

  /** Reads the blocks of {@code file}. */
  static ReadmeExamples of(Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<Block> blocks = new ArrayList<>();
    String heading = "";
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      if (line.startsWith("#")) {
        heading = line.replaceFirst("^#+\\s*", "");
      } else if (line.startsWith("```")) {
        String language = line.substring(3).trim();
        List<String> text = new ArrayList<>();
        while (++i < lines.size() && !lines.get(i).startsWith("```")) {
          text.add(lines.get(i));
        }
        blocks.add(new Block(heading, language, String.join("\n", text)));
      }
    }
    return new ReadmeExamples(blocks);
  }

  /** Returns the blocks under {@code heading} in {@code language}, in order. */
  List<String> under(String heading, String language) {
    return blocks.stream()
        .filter(b -> b.heading().equals(heading) && b.language().equals(language))
        .map(Block::text)
        .toList();
  }
}
