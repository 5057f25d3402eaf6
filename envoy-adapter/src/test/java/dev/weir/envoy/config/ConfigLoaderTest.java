package dev.weir.envoy.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigLoaderTest {

  @TempDir Path dir;

  private static EnvoyConfig load(Path path, ConfigLoadOptions options) throws ConfigException {
    return new ConfigLoader(options).load(path);
  }

  @Test
  void load_fullFile_compilesEveryField() throws ConfigException {
    EnvoyConfig config = load(Fixtures.path("valid/full.yaml"), ConfigLoadOptions.DEFAULTS);

    DescriptorLevel root = config.domain("shop").orElseThrow().root();
    RateLimitRule perIp = root.exact("remote_address", "").orElseThrow().rule().orElseThrow();
    assertThat(perIp)
        .isEqualTo(
            new RateLimitRule(
                2, Unit.MINUTE, false, "per-ip", List.of(), Algorithm.FIXED_WINDOW, 0, 0));
    DescriptorNode user =
        root.exact("path", "/api").orElseThrow().children().exact("user", "").orElseThrow();
    assertThat(user.path()).isEqualTo("path_/api.user");
    assertThat(user.rule().orElseThrow().unit()).isEqualTo(Unit.WEEK);
    assertThat(user.rule().orElseThrow().requestsPerUnit()).isEqualTo(4_294_967_295L);
    DescriptorNode files = root.wildcards().get(0);
    assertThat(files.value()).isEqualTo("report*");
    assertThat(files.shareThreshold()).isTrue();
    assertThat(files.shadowMode()).isTrue();
    assertThat(files.metadata()).isEqualTo(Map.of("owner", "team-a", "tags", List.of("one", 2.0)));
    assertThat(files.rule().orElseThrow())
        .isEqualTo(
            new RateLimitRule(
                10,
                Unit.HOUR,
                false,
                "",
                List.of(),
                Algorithm.LEAKY_BUCKET,
                20,
                Behavior.GLOBAL | Behavior.DRAIN_OVER_LIMIT));
    RateLimitRule internal = root.exact("internal", "").orElseThrow().rule().orElseThrow();
    assertThat(internal.unlimited()).isTrue();
    assertThat(internal.unit()).isEqualTo(Unit.UNKNOWN);
    assertThat(internal.replaces()).containsExactly("per-ip");
    assertThat(root.exact("whitelisted", "").orElseThrow().rule()).isEmpty();
  }

  @Test
  void load_defaultAlgorithmOption_appliesToRulesNamingNone() throws ConfigException {
    EnvoyConfig config =
        load(
            Fixtures.path("valid/full.yaml"), new ConfigLoadOptions(false, Algorithm.TOKEN_BUCKET));

    DescriptorLevel root = config.domain("shop").orElseThrow().root();
    assertThat(root.exact("remote_address", "").orElseThrow().rule().orElseThrow().algorithm())
        .isEqualTo(Algorithm.TOKEN_BUCKET);
    assertThat(root.wildcards().get(0).rule().orElseThrow().algorithm())
        .isEqualTo(Algorithm.LEAKY_BUCKET);
  }

  @Test
  void load_directory_readsYamlFilesAndSkipsDotfilesAndOthers() throws Exception {
    Files.writeString(dir.resolve("a.yaml"), "domain: one\n");
    Files.writeString(dir.resolve("b.yml"), "domain: two\n");
    Files.writeString(dir.resolve(".hidden.yaml"), "not: valid\n");
    Files.writeString(dir.resolve("notes.txt"), "not yaml");

    EnvoyConfig config = load(dir, ConfigLoadOptions.DEFAULTS);

    assertThat(config.domains()).containsOnlyKeys("one", "two");
  }

  @Test
  void load_kubernetesConfigMapLayout_readsFilesThroughDataLink() throws Exception {
    writeConfigMap(dir, "..2026_01_01_00_00_00.1", "domain: shop\n");

    EnvoyConfig config = load(dir, ConfigLoadOptions.DEFAULTS);

    assertThat(config.domains()).containsOnlyKeys("shop");
  }

  /**
   * Lays out a ConfigMap volume the way the kubelet does: a timestamped dir, {@code ..data}, links.
   */
  static void writeConfigMap(Path mount, String version, String content) throws IOException {
    Path versioned = Files.createDirectories(mount.resolve(version));
    Files.writeString(versioned.resolve("config.yaml"), content);
    Path tmpLink = mount.resolve("..data_tmp");
    Files.deleteIfExists(tmpLink);
    Files.createSymbolicLink(tmpLink, Path.of(version));
    Files.move(tmpLink, mount.resolve("..data"), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    Path visible = mount.resolve("config.yaml");
    if (!Files.isSymbolicLink(visible)) {
      Files.createSymbolicLink(visible, Path.of("..data/config.yaml"));
    }
  }

  @Test
  void validate_directoryWithSeveralBadFiles_reportsEveryError() throws Exception {
    Files.writeString(dir.resolve("a.yaml"), "domain: shop\n");
    Files.writeString(dir.resolve("b.yaml"), "domain: shop\n");
    Files.writeString(dir.resolve("c.yaml"), "descriptors: []\n");
    Files.writeString(dir.resolve("d.yaml"), "domain: ok\n");

    List<String> errors = new ConfigValidator(ConfigLoadOptions.DEFAULTS).validate(dir);

    assertThat(errors)
        .containsExactly(
            dir.resolve("b.yaml") + ": duplicate domain 'shop' in config file",
            dir.resolve("c.yaml") + ": config file cannot have empty domain");
  }

  @Test
  void validate_validFile_returnsNoError() {
    assertThat(
            new ConfigValidator(ConfigLoadOptions.DEFAULTS)
                .validate(Fixtures.path("valid/full.yaml")))
        .isEmpty();
  }

  @Test
  void validate_missingPath_reportsIt() {
    Path missing = dir.resolve("missing.yaml");

    assertThat(new ConfigValidator(ConfigLoadOptions.DEFAULTS).validate(missing))
        .containsExactly(missing + ": config path does not exist");
  }

  @Test
  void run_badFile_printsEveryErrorAndReturnsNonZero() throws Exception {
    Files.writeString(dir.resolve("a.yaml"), "domain: shop\nbogus: 1\n");
    var err = new java.io.ByteArrayOutputStream();
    var out = new java.io.ByteArrayOutputStream();

    int code =
        new ConfigValidator(ConfigLoadOptions.DEFAULTS)
            .run(dir, new java.io.PrintStream(out, true), new java.io.PrintStream(err, true));

    assertThat(code).isEqualTo(1);
    assertThat(err.toString())
        .isEqualTo(
            dir.resolve("a.yaml") + ": config error, unknown key 'bogus'" + System.lineSeparator());
    assertThat(out.toString()).isEmpty();
  }
}
