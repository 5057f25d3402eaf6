package dev.weir.envoy.config;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/** Loads descriptor files into an {@link EnvoyConfig}: all of them or nothing. */
public final class ConfigLoader {

  private final ConfigLoadOptions options;

  /** Creates a loader reading and compiling with {@code options}. */
  public ConfigLoader(ConfigLoadOptions options) {
    this.options = options;
  }

  /** Returns the options this loader reads and compiles with. */
  public ConfigLoadOptions options() {
    return options;
  }

  /**
   * Reads the files at {@code path} (see {@link ConfigFiles}) within the options' limits, below a
   * directory only those whose runtime key starts with the options' key prefix.
   */
  public List<ConfigFile> read(Path path) throws DescriptorConfigException {
    return ConfigFiles.read(path, options.limits(), options.keyPrefix());
  }

  /** Reads and compiles the file or directory at {@code path}; throws on the first error. */
  public EnvoyConfig load(Path path) throws DescriptorConfigException {
    return compile(read(path));
  }

  /** Compiles {@code files} in order; throws on the first error. */
  public EnvoyConfig compile(List<ConfigFile> files) throws DescriptorConfigException {
    return compile(files, warning -> {});
  }

  /**
   * Compiles {@code files} in order, passing what loads but is likely a mistake (a key written
   * twice in one map) to {@code warnings}; throws on the first error.
   */
  public EnvoyConfig compile(List<ConfigFile> files, Consumer<String> warnings)
      throws DescriptorConfigException {
    return compile(files, warnings, options.limits(), "file");
  }

  /**
   * Compiles {@code files} as {@link #compile(List, Consumer)} does, without the per-file size
   * limit: for YAML that Weir wrote from input another limit already bounds (an xDS resource,
   * bounded by {@code WEIR_ENVOY_XDS_MAX_MSG_SIZE_IN_BYTES}, whose YAML is larger than its
   * protobuf); an error calls each file a resource.
   */
  public EnvoyConfig compileWritten(List<ConfigFile> files, Consumer<String> warnings)
      throws DescriptorConfigException {
    return compile(
        files,
        warnings,
        new ConfigLimits(Integer.MAX_VALUE, options.limits().maxTotalBytes()),
        "resource");
  }

  private EnvoyConfig compile(
      List<ConfigFile> files, Consumer<String> warnings, ConfigLimits limits, String unit)
      throws DescriptorConfigException {
    ConfigCompiler compiler = new ConfigCompiler(options, unit);
    for (ConfigFile file : files) {
      ParsedFile parsed = parse(file, limits);
      compiler.add(parsed);
      parsed.warnings().forEach(warnings);
    }
    return compiler.build();
  }

  /**
   * What checking files found: every error (the first of each file that fails) and every warning
   * (each {@code <file>: <text>}).
   */
  public record Report(List<String> errors, List<String> warnings) {

    /** Creates a report, copying both lists. */
    public Report {
      errors = List.copyOf(errors);
      warnings = List.copyOf(warnings);
    }
  }

  /**
   * Compiles {@code files} in order and returns every error (the first of each file that fails, a
   * failing file being left out of the files after it) and the warnings of the files that parse.
   */
  public Report check(List<ConfigFile> files) {
    List<String> errors = new ArrayList<>();
    List<String> warnings = new ArrayList<>();
    ConfigCompiler compiler = new ConfigCompiler(options);
    for (ConfigFile file : files) {
      try {
        ParsedFile parsed = parse(file, options.limits());
        warnings.addAll(parsed.warnings());
        compiler.add(parsed);
      } catch (DescriptorConfigException e) {
        errors.addAll(e.errors());
      }
    }
    return new Report(errors, warnings);
  }

  /**
   * Compiles {@code files} in order and returns every error: the first of each file that fails, a
   * failing file being left out of the files after it.
   */
  public List<String> errors(List<ConfigFile> files) {
    return check(files).errors();
  }

  private static ParsedFile parse(ConfigFile file, ConfigLimits limits)
      throws DescriptorConfigException {
    return YamlConfigParser.parse(file.name(), file.text(), limits);
  }
}
