package dev.weir.e2e.image;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The instructions of a Dockerfile in order, each with the build stage it belongs to: continuation
 * lines joined, comments dropped, arguments split as the shell form splits them.
 */
final class DockerfileInstructions {

  /**
   * One instruction.
   *
   * @param stage the index of its build stage, 0 for the first {@code FROM}
   * @param keyword the instruction, upper case ({@code COPY}, {@code RUN}, ...)
   * @param flags its leading {@code --name=value} options, by name
   * @param arguments the rest, split at unquoted white space, quotes removed
   * @param text the instruction after the keyword, as written (continuations joined)
   */
  record Instruction(
      int stage, String keyword, Map<String, String> flags, List<String> arguments, String text) {

    /** Returns whether this is a {@code COPY} or {@code ADD} from the build context. */
    boolean copiesFromContext() {
      return (keyword.equals("COPY") || keyword.equals("ADD")) && !flags.containsKey("from");
    }

    /** Returns the sources of a {@code COPY} or {@code ADD}: every argument but the last. */
    List<String> sources() {
      return arguments.subList(0, arguments.size() - 1);
    }
  }

  private final List<Instruction> instructions;

  private DockerfileInstructions(List<Instruction> instructions) {
    this.instructions = instructions;
  }

  /** Reads the Dockerfile {@code file}. */
  static DockerfileInstructions read(Path file) {
    try {
      return parse(Files.readAllLines(file));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Parses the lines of a Dockerfile. */
  static DockerfileInstructions parse(List<String> lines) {
    List<Instruction> instructions = new ArrayList<>();
    int stage = -1;
    StringBuilder pending = new StringBuilder();
    for (String line : lines) {
      String trimmed = line.strip();
      if (trimmed.startsWith("#") || trimmed.isEmpty()) {
        continue;
      }
      if (trimmed.endsWith("\\")) {
        pending.append(trimmed, 0, trimmed.length() - 1).append(' ');
        continue;
      }
      pending.append(trimmed);
      String[] keywordAndRest = pending.toString().strip().split("\\s+", 2);
      pending.setLength(0);
      String keyword = keywordAndRest[0].toUpperCase();
      if (keyword.equals("FROM")) {
        stage++;
      }
      String text = keywordAndRest.length > 1 ? keywordAndRest[1] : "";
      List<String> words = words(text);
      Map<String, String> flags = new LinkedHashMap<>();
      while (!words.isEmpty() && words.get(0).startsWith("--")) {
        String[] flag = words.remove(0).substring(2).split("=", 2);
        flags.put(flag[0], flag.length > 1 ? flag[1] : "");
      }
      instructions.add(new Instruction(stage, keyword, flags, List.copyOf(words), text));
    }
    return new DockerfileInstructions(instructions);
  }

  /** Returns every instruction, in order. */
  List<Instruction> all() {
    return instructions;
  }

  /** Returns the instructions of build stage {@code stage}, in order. */
  List<Instruction> ofStage(int stage) {
    return instructions.stream().filter(i -> i.stage() == stage).toList();
  }

  /** Returns the index of the last build stage: the one the image is made of. */
  int finalStage() {
    return instructions.get(instructions.size() - 1).stage();
  }

  /**
   * Returns the variables {@code ENV} sets in build stage {@code stage} ({@code KEY=VALUE} form).
   */
  Map<String, String> environment(int stage) {
    Map<String, String> env = new LinkedHashMap<>();
    for (Instruction instruction : ofStage(stage)) {
      if (instruction.keyword().equals("ENV")) {
        for (String assignment : instruction.arguments()) {
          String[] keyValue = assignment.split("=", 2);
          env.put(keyValue[0], keyValue.length > 1 ? keyValue[1] : "");
        }
      }
    }
    return env;
  }

  private static List<String> words(String text) {
    List<String> words = new ArrayList<>();
    StringBuilder word = new StringBuilder();
    boolean quoted = false;
    boolean inWord = false;
    for (char c : text.toCharArray()) {
      if (c == '"') {
        quoted = !quoted;
        inWord = true;
      } else if (Character.isWhitespace(c) && !quoted) {
        if (inWord) {
          words.add(word.toString());
          word.setLength(0);
          inWord = false;
        }
      } else {
        word.append(c);
        inWord = true;
      }
    }
    if (inWord) {
      words.add(word.toString());
    }
    return words;
  }
}
