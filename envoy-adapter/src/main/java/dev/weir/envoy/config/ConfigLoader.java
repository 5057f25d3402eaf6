package dev.weir.envoy.config;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Loads descriptor files into an {@link EnvoyConfig}: all of them or nothing. */
public final class ConfigLoader {

  private final ConfigLoadOptions options;

  /** Creates a loader reading and compiling with {@code options}. */
  public ConfigLoader(ConfigLoadOptions options) {
    this.options = options;
  }

  /** Reads the files at {@code path} (see {@link ConfigFiles}) within the options' limits. */
  public List<ConfigFile> read(Path path) throws ConfigException {
    return ConfigFiles.read(path, options.limits());
  }

  /** Reads and compiles the file or directory at {@code path}; throws on the first error. */
  public EnvoyConfig load(Path path) throws ConfigException {
    return compile(read(path));
  }

  /** Compiles {@code files} in order; throws on the first error. */
  public EnvoyConfig compile(List<ConfigFile> files) throws ConfigException {
    ConfigCompiler compiler = new ConfigCompiler(options);
    for (ConfigFile file : files) {
      compiler.add(parse(file));
    }
    return compiler.build();
  }

  /**
   * Compiles {@code files} in order and returns every error: the first of each file that fails, a
   * failing file being left out of the files after it.
   */
  public List<String> errors(List<ConfigFile> files) {
    List<String> errors = new ArrayList<>();
    ConfigCompiler compiler = new ConfigCompiler(options);
    for (ConfigFile file : files) {
      try {
        compiler.add(parse(file));
      } catch (ConfigException e) {
        errors.addAll(e.errors());
      }
    }
    return errors;
  }

  private ParsedFile parse(ConfigFile file) throws ConfigException {
    return YamlConfigParser.parse(file.name(), file.text(), options.limits());
  }
}
