package dev.weir.core.config;

/**
 * A configuration value that cannot be used. Its message is one line naming the variable, the value
 * and what is allowed, fit to print as the only output of a failed start-up.
 */
public final class ConfigException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with the one-line {@code message} users see. */
  public ConfigException(String message) {
    super(message);
  }

  /**
   * Returns the message for {@code variable} set to {@code value}, which is not {@code expected}.
   */
  public static ConfigException invalid(String variable, String value, String expected) {
    return new ConfigException(variable + "='" + value + "' is not valid: expected " + expected);
  }
}
