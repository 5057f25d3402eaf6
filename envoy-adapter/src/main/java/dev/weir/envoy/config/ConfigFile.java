package dev.weir.envoy.config;

import java.util.Objects;

/**
 * The content of one descriptor file as read at one moment.
 *
 * @param name the file's path as shown in errors
 * @param text the file's content
 */
public record ConfigFile(String name, String text) {

  /** Creates a file. */
  public ConfigFile {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(text, "text");
  }
}
