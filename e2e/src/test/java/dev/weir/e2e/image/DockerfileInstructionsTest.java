package dev.weir.e2e.image;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.e2e.image.DockerfileInstructions.Instruction;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link DockerfileInstructions} reads instructions as Docker's shell form writes them. */
class DockerfileInstructionsTest {

  private static final DockerfileInstructions DOCKERFILE =
      DockerfileInstructions.parse(
          List.of(
              "# comment",
              "FROM eclipse-temurin:17-jdk AS build",
              "COPY a/pom.xml \\",
              "     # a comment inside the continuation",
              "     b/pom.xml  modules/",
              "RUN ./mvnw package",
              "",
              "FROM eclipse-temurin:17-jre",
              "COPY --from=build --chown=1:1 /build/app.jar /opt/app.jar",
              "ENV A=1 \\",
              "    B=\"two words\"",
              "ENV C=3"));

  @Test
  void instructions_carryTheirStage_flagsAndArguments() {
    List<Instruction> all = DOCKERFILE.all();

    assertThat(all)
        .extracting(Instruction::keyword)
        .containsExactly("FROM", "COPY", "RUN", "FROM", "COPY", "ENV", "ENV");
    assertThat(all).extracting(Instruction::stage).containsExactly(0, 0, 0, 1, 1, 1, 1);
    assertThat(all.get(1).sources()).containsExactly("a/pom.xml", "b/pom.xml");
    assertThat(all.get(1).copiesFromContext()).isTrue();
    assertThat(all.get(4).flags()).containsEntry("from", "build").containsEntry("chown", "1:1");
    assertThat(all.get(4).copiesFromContext()).isFalse();
    assertThat(DOCKERFILE.finalStage()).isEqualTo(1);
  }

  @Test
  void environment_joinsEveryEnvOfAStage_quotesRemoved() {
    assertThat(DOCKERFILE.environment(1))
        .containsExactly(Map.entry("A", "1"), Map.entry("B", "two words"), Map.entry("C", "3"));
    assertThat(DOCKERFILE.environment(0)).isEmpty();
  }
}
