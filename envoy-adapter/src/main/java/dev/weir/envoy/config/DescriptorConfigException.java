package dev.weir.envoy.config;

import java.util.List;

/** A descriptor configuration that cannot be loaded; each error reads {@code <file>: <text>}. */
public final class DescriptorConfigException extends Exception {
  private static final long serialVersionUID = 1L;

  private final List<String> errors;

  /** Creates the exception for one error message. */
  public DescriptorConfigException(String error) {
    this(List.of(error));
  }

  /** Creates the exception for {@code errors}, which must not be empty. */
  public DescriptorConfigException(List<String> errors) {
    super(String.join("\n", errors));
    if (errors.isEmpty()) {
      throw new IllegalArgumentException("errors must not be empty");
    }
    this.errors = List.copyOf(errors);
  }

  /** Returns every error, each {@code <file>: <text>}. */
  public List<String> errors() {
    return errors;
  }
}
