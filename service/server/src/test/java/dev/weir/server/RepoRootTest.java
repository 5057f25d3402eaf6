package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RepoRootTest {

  @TempDir Path dir;

  @Test
  void from_folderBelowOneWithMvnw_returnsThatFolder() throws Exception {
    Files.writeString(dir.resolve("mvnw"), "");
    Path below = Files.createDirectories(dir.resolve("service/server"));

    assertThat(RepoRoot.from(below)).isEqualTo(dir);
  }

  @Test
  void from_noMvnwUpToTheFileSystemRoot_failsNamingTheStart() {
    Path start = dir.toAbsolutePath();

    assertThatThrownBy(() -> RepoRoot.from(start))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining(start.toString())
        .hasMessageContaining("mvnw");
  }

  @Test
  void find_fromTheModule_holdsTheDocs() {
    assertThat(RepoRoot.find().resolve("docs/operations.md")).isRegularFile();
  }

  @Test
  void mainJavaSources_keepsOutOfBuildOutput() throws Exception {
    Path source = dir.resolve("service/a/src/main/java/dev/A.java");
    Path built = dir.resolve("service/a/target/src/main/java/dev/B.java");
    Path test = dir.resolve("service/a/src/test/java/dev/C.java");
    for (Path file : new Path[] {source, built, test}) {
      Files.createDirectories(file.getParent());
      Files.writeString(file, "");
    }

    assertThat(RepoRoot.mainJavaSources(dir)).containsExactly(source);
  }
}
