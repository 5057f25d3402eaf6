package dev.weir.envoy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigFilesTest {

  @TempDir Path dir;

  private Path write(String name, String content) throws Exception {
    Path file = dir.resolve(name);
    Files.createDirectories(file.getParent());
    return Files.writeString(file, content);
  }

  private List<String> names(Path root) throws DescriptorConfigException {
    return ConfigFiles.read(root, ConfigLimits.DEFAULTS).stream()
        .map(f -> root.relativize(Path.of(f.name())).toString())
        .toList();
  }

  @Test
  void read_directory_everyRegularFileRecursivelyWhateverItsExtensionInWalkOrder()
      throws Exception {
    write("b.yaml", "domain: b\n");
    write("a/z.conf", "domain: az\n");
    write("a.yml", "domain: a\n");
    write("config/nested/deeper/rules", "domain: deep\n");

    assertThat(names(dir))
        .containsExactly("a/z.conf", "a.yml", "b.yaml", "config/nested/deeper/rules");
  }

  @Test
  void read_keyPrefix_onlyFilesWhosePathStartsWithItOnceSeparatorsAreDots() throws Exception {
    write("config.yaml", "domain: top\n");
    write("config.extra.yaml", "domain: extra\n");
    write("config/a.yaml", "domain: a\n");
    write("config.d/b.yaml", "domain: b\n");
    write("configuration.yaml", "domain: no\n");
    write("other/config.yaml", "domain: no\n");
    Files.createSymbolicLink(dir.resolve("unrelated"), Path.of("nowhere"));

    List<String> names =
        ConfigFiles.read(dir, ConfigLimits.DEFAULTS, "config.").stream()
            .map(f -> dir.relativize(Path.of(f.name())).toString())
            .toList();

    assertThat(names)
        .containsExactly("config/a.yaml", "config.d/b.yaml", "config.extra.yaml", "config.yaml");
    assertThat(ConfigFiles.list(dir, "config.").skipped())
        .containsExactlyInAnyOrder("configuration.yaml", "other", "unrelated");
  }

  @Test
  void list_namesStartingWithADot_skippedAtEveryDepth() throws Exception {
    write(".hidden.yaml", "not: valid\n");
    write(".git/config", "not: valid\n");
    write("sub/.swp", "not: valid\n");
    write("sub/rules.yaml", "domain: a\n");

    ConfigFiles.Listing listing = ConfigFiles.list(dir);

    assertThat(listing.files()).containsExactly(dir.resolve("sub/rules.yaml"));
    assertThat(listing.skipped()).containsExactly(".git", ".hidden.yaml", "sub/.swp");
  }

  @Test
  void read_configMapVolume_readsEachFileOnceThroughItsTopLevelLink() throws Exception {
    ConfigMapVolume volume = new ConfigMapVolume(dir);
    volume.publish(Map.of("shop.yaml", "domain: shop\n", "team/api.yaml", "domain: api\n"));

    assertThat(names(dir)).containsExactly("shop.yaml", "team/api.yaml");
    assertThat(ConfigFiles.list(dir).skipped())
        .containsExactly("..2026_11_30_10_01_00.1001", "..data");
  }

  @Test
  void read_configMapUpdatedBetweenTwoFiles_readsOneVersionNeverAMix() throws Exception {
    ConfigMapVolume volume = new ConfigMapVolume(dir);
    volume.publish(Map.of("a.yaml", "domain: x\n", "b.yaml", "domain: shop\n"));
    java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();

    List<ConfigFile> files =
        ConfigFiles.read(
            dir,
            ConfigLimits.DEFAULTS,
            (file, target, max) -> {
              byte[] bytes = readAll(target);
              if (reads.incrementAndGet() == 1) {
                publish(volume, Map.of("a.yaml", "domain: shop\n", "b.yaml", "domain: y\n"));
              }
              return bytes;
            });

    assertThat(files)
        .extracting(ConfigFile::text)
        .as("the update moved rule shop from b.yaml to a.yaml")
        .containsExactly("domain: shop\n", "domain: y\n");
    assertThat(files).extracting(ConfigFile::name)
        .containsExactly(dir.resolve("a.yaml").toString(), dir.resolve("b.yaml").toString());
  }

  @Test
  void read_configMapUpdatedDuringEveryRead_refusedAfterTheLastAttempt() throws Exception {
    ConfigMapVolume volume = new ConfigMapVolume(dir);
    volume.publish(Map.of("a.yaml", "domain: v0\n"));
    java.util.concurrent.atomic.AtomicInteger version = new java.util.concurrent.atomic.AtomicInteger();

    assertThatThrownBy(
            () ->
                ConfigFiles.read(
                    dir,
                    ConfigLimits.DEFAULTS,
                    (file, target, max) -> {
                      byte[] bytes = readAll(target);
                      publish(volume, Map.of("a.yaml", "domain: v" + version.incrementAndGet() + "\n"));
                      return bytes;
                    }))
        .isInstanceOf(DescriptorConfigException.class)
        .hasMessage(dir + ": the config files changed while they were read, 3 times in a row; none was loaded");
  }

  private static byte[] readAll(Path target) throws DescriptorConfigException {
    try {
      return Files.readAllBytes(target);
    } catch (java.io.IOException e) {
      throw new DescriptorConfigException(target + ": " + e);
    }
  }

  private static void publish(ConfigMapVolume volume, Map<String, String> files) {
    try {
      volume.publish(files);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @Test
  void read_linkBesideItsTarget_readsTheFileOnceUnderTheFirstName() throws Exception {
    write("b.yaml", "domain: b\n");
    Files.createSymbolicLink(dir.resolve("a.yaml"), Path.of("b.yaml"));
    Files.createDirectories(dir.resolve("sub"));
    Files.createSymbolicLink(dir.resolve("sub/c.yaml"), Path.of("../b.yaml"));

    assertThat(names(dir)).containsExactly("a.yaml");
  }

  @Test
  void read_directoryLinkLoop_walksEachDirectoryOnce() throws Exception {
    write("sub/rules.yaml", "domain: a\n");
    Files.createSymbolicLink(dir.resolve("sub/loop"), Path.of(".."));
    Files.createSymbolicLink(dir.resolve("sub-link"), Path.of("sub"));

    assertThat(names(dir)).containsExactly("sub/rules.yaml");
  }

  @Test
  void list_linkToNothing_failsNamingItAndItsTarget() throws Exception {
    write("a.yaml", "domain: a\n");
    Files.createSymbolicLink(dir.resolve("gone.yaml"), Path.of("..data/gone.yaml"));

    assertThatThrownBy(() -> ConfigFiles.list(dir))
        .isInstanceOf(DescriptorConfigException.class)
        .hasMessage(
            dir.resolve("gone.yaml")
                + ": is a link to ..data/gone.yaml, which does not exist");
  }

  @Test
  void list_configMapNameNotLinkedYet_failsNamingItAndTheVersion() throws Exception {
    new ConfigMapVolume(dir).publish(Map.of("a.yaml", "domain: a\n"));
    Path next = Files.createDirectories(dir.resolve("..2026_11_30_11_00_00.1"));
    Files.writeString(next.resolve("a.yaml"), "domain: a\n");
    Files.writeString(next.resolve("b.yaml"), "domain: b\n");
    Files.writeString(next.resolve("c.yaml"), "domain: c\n");
    Files.createSymbolicLink(dir.resolve("..data_tmp"), next.getFileName());
    Files.move(dir.resolve("..data_tmp"), dir.resolve("..data"), StandardCopyOption.ATOMIC_MOVE);

    assertThatThrownBy(() -> ConfigFiles.list(dir))
        .isInstanceOf(DescriptorConfigException.class)
        .hasMessage(
            dir
                + ": a ConfigMap update is not finished: ..data (-> ..2026_11_30_11_00_00.1) holds"
                + " b.yaml, c.yaml, with no link in the directory yet; the files are read once"
                + " every name of ..data has one");
  }

  @Test
  void list_linkLoop_failsNamingIt() throws Exception {
    write("a.yaml", "domain: a\n");
    Files.createSymbolicLink(dir.resolve("x.yaml"), Path.of("y.yaml"));
    Files.createSymbolicLink(dir.resolve("y.yaml"), Path.of("x.yaml"));

    assertThatThrownBy(() -> ConfigFiles.list(dir))
        .isInstanceOf(DescriptorConfigException.class)
        .hasMessageStartingWith(dir.resolve("x.yaml") + ": error reading config path: ");
  }

  @Test
  void read_singleFile_readsItWhateverItsName() throws Exception {
    Path file = write(".rules", "domain: a\n");

    assertThat(ConfigFiles.read(file, ConfigLimits.DEFAULTS))
        .containsExactly(new ConfigFile(file.toString(), "domain: a\n"));
  }

  @Test
  void read_missingPath_failsNamingIt() {
    Path missing = dir.resolve("missing");

    assertThatThrownBy(() -> ConfigFiles.read(missing, ConfigLimits.DEFAULTS))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e -> assertThat(e.errors()).containsExactly(missing + ": config path does not exist"));
  }

  @Test
  void read_fileNotUtf8_failsNamingIt() throws Exception {
    Path file = dir.resolve("latin1.yaml");
    Files.write(file, "domain: caf\u00e9\n".getBytes(StandardCharsets.ISO_8859_1));

    assertThatThrownBy(() -> ConfigFiles.read(dir, ConfigLimits.DEFAULTS))
        .isInstanceOfSatisfying(
            DescriptorConfigException.class,
            e ->
                assertThat(e.errors())
                    .containsExactly(file + ": error reading config file: not valid UTF-8"));
  }

  @Test
  void read_fileOfExactlyTheLimit_isRead() throws Exception {
    Path file = write("a.yaml", "domain: a\n#" + "x".repeat(1024 - 12) + "\n");

    assertThat(Files.size(file)).isEqualTo(1024);
    assertThat(ConfigFiles.read(dir, new ConfigLimits(1024, 1024))).hasSize(1);
  }
}
