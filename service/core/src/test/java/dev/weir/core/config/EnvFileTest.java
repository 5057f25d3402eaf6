package dev.weir.core.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EnvFileTest {

  @TempDir Path dir;

  @Test
  void read_keyValueLines_skipsCommentsAndBlanks() throws Exception {
    Path file = dir.resolve("weir.conf");
    Files.write(
        file,
        List.of(
            "# comment", "", "GUBER_CACHE_SIZE = 100", "WEIR_HTTP_ADDRESS=0.0.0.0:80", "X=a=b"));
    assertThat(EnvFile.read(file))
        .containsExactlyInAnyOrderEntriesOf(
            Map.of("GUBER_CACHE_SIZE", "100", "WEIR_HTTP_ADDRESS", "0.0.0.0:80", "X", "a=b"));
  }

  @Test
  void parse_lineWithoutEquals_namesFileAndLine() {
    assertThatThrownBy(() -> EnvFile.parse("weir.conf", List.of("A=1", "oops")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "--config 'weir.conf' line 2='oops' is not valid: expected KEY=VALUE (or export"
                + " KEY=VALUE), a KEY without spaces");
  }

  @Test
  void parse_exportPrefix_readAsInAShellFile() {
    assertThat(
            EnvFile.parse(
                "weir.env", List.of("export WEIR_CACHE_SIZE=100", "export\tWEIR_LOG_LEVEL = debug")))
        .containsExactlyInAnyOrderEntriesOf(
            Map.of("WEIR_CACHE_SIZE", "100", "WEIR_LOG_LEVEL", "debug"));
  }

  @Test
  void parse_keyWithASpace_refusedNamingFileLineAndWhatIsExpected() {
    assertThatThrownBy(() -> EnvFile.parse("weir.env", List.of("A=1", "set WEIR_CACHE_SIZE=100")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "--config 'weir.env' line 2='set WEIR_CACHE_SIZE=100' is not valid: expected KEY=VALUE"
                + " (or export KEY=VALUE), a KEY without spaces");
  }

  @Test
  void read_missingFile_namesFile() {
    Path missing = dir.resolve("nope.conf");
    assertThatThrownBy(() -> EnvFile.read(missing))
        .isInstanceOf(ConfigException.class)
        .hasMessage("--config '" + missing + "' cannot be read: NoSuchFileException");
  }

  @Test
  void read_fileStartingWithAByteOrderMark_firstKeyReadWithoutIt() throws Exception {
    Path file = dir.resolve("weir.conf");
    Files.write(file, "\uFEFFWEIR_CACHE_SIZE=5\nWEIR_LOG_LEVEL=debug\n".getBytes(StandardCharsets.UTF_8));

    assertThat(EnvFile.read(file))
        .containsExactlyInAnyOrderEntriesOf(
            Map.of("WEIR_CACHE_SIZE", "5", "WEIR_LOG_LEVEL", "debug"));
  }

  @Test
  void read_byteThatIsNotUtf8_namesFileLineAndByte() throws Exception {
    Path file = dir.resolve("weir.conf");
    byte[] head = "WEIR_CACHE_SIZE=5\nWEIR_NAME=caf".getBytes(StandardCharsets.US_ASCII);
    byte[] bytes = new byte[head.length + 2];
    System.arraycopy(head, 0, bytes, 0, head.length);
    bytes[head.length] = (byte) 0xE9;
    bytes[head.length + 1] = '\n';
    Files.write(file, bytes);

    assertThatThrownBy(() -> EnvFile.read(file))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "--config '"
                + file
                + "' cannot be read: it is not valid UTF-8 (line 2, byte "
                + (head.length + 1)
                + " of the file); save it as UTF-8");
  }

  @Test
  void read_utf16FileWithoutByteOrderMark_refusedNamingFileLineAndByte() throws Exception {
    Path file = dir.resolve("weir.conf");
    Files.write(file, "WEIR_CACHE_SIZE=5\n".getBytes(StandardCharsets.UTF_16LE));

    assertThatThrownBy(() -> EnvFile.read(file))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "--config '"
                + file
                + "' cannot be read: it holds a NUL byte (line 1, byte 2 of the file), as a"
                + " UTF-16 file does; save it as UTF-8");
  }

  @Test
  void read_utf16BigEndianFileWithoutByteOrderMark_refusedAtItsFirstByte() throws Exception {
    Path file = dir.resolve("weir.conf");
    Files.write(file, "WEIR_CACHE_SIZE=5\n".getBytes(StandardCharsets.UTF_16BE));

    assertThatThrownBy(() -> EnvFile.read(file))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "--config '"
                + file
                + "' cannot be read: it holds a NUL byte (line 1, byte 1 of the file), as a"
                + " UTF-16 file does; save it as UTF-8");
  }

  @Test
  void read_utf16FileWithByteOrderMark_refusedAtItsFirstNulByte() throws Exception {
    Path file = dir.resolve("weir.conf");
    byte[] text = "WEIR_CACHE_SIZE=5\n".getBytes(StandardCharsets.UTF_16LE);
    byte[] bytes = new byte[text.length + 2];
    bytes[0] = (byte) 0xFF;
    bytes[1] = (byte) 0xFE;
    System.arraycopy(text, 0, bytes, 2, text.length);
    Files.write(file, bytes);

    assertThatThrownBy(() -> EnvFile.read(file))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "--config '"
                + file
                + "' cannot be read: it holds a NUL byte (line 1, byte 4 of the file), as a"
                + " UTF-16 file does; save it as UTF-8");
  }

  @Test
  void read_directory_saysItIsADirectory() {
    assertThatThrownBy(() -> EnvFile.read(dir))
        .isInstanceOf(ConfigException.class)
        .hasMessage("--config '" + dir + "' cannot be read: it is a directory; give a file");
  }

  @Test
  void mergeUnder_sameKey_environmentWins() {
    Map<String, String> merged =
        EnvFile.mergeUnder(Map.of("A", "file", "B", "file"), Map.of("A", "env"));
    assertThat(merged).containsExactlyInAnyOrderEntriesOf(Map.of("A", "env", "B", "file"));
  }

  @Test
  void mergeUnder_emptyInTheEnvironment_countsAsUnsetSoTheFileValueApplies() {
    Map<String, String> merged =
        EnvFile.mergeUnder(
            Map.of("WEIR_CACHE_SIZE", "100000", "WEIR_A", "file"),
            Map.of("WEIR_CACHE_SIZE", "", "WEIR_A", " ", "WEIR_B", ""));

    assertThat(merged)
        .containsEntry("WEIR_CACHE_SIZE", "100000")
        .containsEntry("WEIR_A", "file")
        .containsEntry("WEIR_B", "");
  }
}
