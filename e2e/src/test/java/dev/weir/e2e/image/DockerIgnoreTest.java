package dev.weir.e2e.image;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link DockerIgnore} matches as Docker's documentation of {@code .dockerignore} says. */
class DockerIgnoreTest {

  @Test
  void starAndQuestionMark_stayWithinOneSegment() {
    DockerIgnore ignore = DockerIgnore.parse(List.of("*/temp*", "*/*/temp*", "temp?"));

    assertThat(ignore.excludes("somedir/temporary.txt")).isTrue();
    assertThat(ignore.excludes("somedir/temp")).isTrue();
    assertThat(ignore.excludes("somedir/subdir/temporary.txt")).isTrue();
    assertThat(ignore.excludes("tempa")).isTrue();
    assertThat(ignore.excludes("temporary.txt")).isFalse();
    assertThat(ignore.excludes("tempab")).isFalse();
    assertThat(ignore.excludes("a/b/c/temp")).isFalse();
  }

  @Test
  void doubleStar_spansAnyNumberOfDirectories_noneIncluded() {
    DockerIgnore ignore = DockerIgnore.parse(List.of("**/target", "**/*.log"));

    assertThat(ignore.excludes("target")).isTrue();
    assertThat(ignore.excludes("target/classes/A.class")).isTrue();
    assertThat(ignore.excludes("service/core/target/weir-core.jar")).isTrue();
    assertThat(ignore.excludes("a.log")).isTrue();
    assertThat(ignore.excludes("e2e/logs/node.log")).isTrue();
    assertThat(ignore.excludes("service/targets/A.java")).isFalse();
    assertThat(ignore.excludes("a.log.txt")).isFalse();
  }

  @Test
  void aMatchingDirectory_excludesEverythingUnderIt() {
    DockerIgnore ignore = DockerIgnore.parse(List.of("/.git/", "docs"));

    assertThat(ignore.excludes(".git/objects/pack/x.pack")).isTrue();
    assertThat(ignore.excludes("docs/node.md")).isTrue();
    assertThat(ignore.excludes("e2e/docs/Test.java")).isFalse();
    assertThat(ignore.excludes("module/.git")).isFalse();
  }

  @Test
  void theLastMatchingLine_decides_andExceptionsReinclude() {
    DockerIgnore ignore =
        DockerIgnore.parse(List.of("# a comment", "", "*.md", "!README*.md", "README-secret.md"));

    assertThat(ignore.excludingPattern("notes.md")).contains("*.md");
    assertThat(ignore.excludingPattern("README.md")).isEmpty();
    assertThat(ignore.excludingPattern("README-secret.md")).contains("README-secret.md");
    assertThat(ignore.excludes("# a comment")).isFalse();
  }

  @Test
  void characterClasses_matchOneCharacterOfTheClass() {
    DockerIgnore ignore = DockerIgnore.parse(List.of("build[0-9]"));

    assertThat(ignore.excludes("build7/out")).isTrue();
    assertThat(ignore.excludes("buildx")).isFalse();
  }
}
