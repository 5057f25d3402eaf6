package dev.weir.core.limiter;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.model.RateLimitRequest;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * The most a client may send: message and body sizes, and the lengths of the fields that become
 * bucket keys. Lengths are counted in UTF-8 bytes. Every limit has a default that a normal client
 * never reaches; a refusal names the field, its length and the limit.
 *
 * @param maxGrpcMessageBytes largest gRPC message accepted ({@code WEIR_GRPC_MAX_MESSAGE_SIZE})
 * @param maxHttpBodyBytes largest HTTP request body accepted ({@code WEIR_HTTP_MAX_BODY_SIZE})
 * @param maxNameBytes longest {@code name} of a native item ({@code WEIR_MAX_NAME_LENGTH})
 * @param maxKeyBytes longest {@code unique_key} of a native item ({@code WEIR_MAX_KEY_LENGTH})
 * @param maxDescriptorEntries most entries in one Envoy descriptor; one with more is answered
 *     OVER_LIMIT ({@code WEIR_MAX_DESCRIPTOR_ENTRIES})
 * @param maxDescriptorValueBytes longest Envoy descriptor key or value written verbatim into a
 *     counter key; a longer one is written as its digest ({@code WEIR_MAX_DESCRIPTOR_VALUE_LENGTH})
 */
public record InputLimits(
    int maxGrpcMessageBytes,
    int maxHttpBodyBytes,
    int maxNameBytes,
    int maxKeyBytes,
    int maxDescriptorEntries,
    int maxDescriptorValueBytes) {

  /** {@code WEIR_GRPC_MAX_MESSAGE_SIZE}. */
  public static final EnvVar GRPC_MAX_MESSAGE_SIZE = EnvVar.of("WEIR_GRPC_MAX_MESSAGE_SIZE");

  /** {@code WEIR_HTTP_MAX_BODY_SIZE}. */
  public static final EnvVar HTTP_MAX_BODY_SIZE = EnvVar.of("WEIR_HTTP_MAX_BODY_SIZE");

  /** {@code WEIR_MAX_NAME_LENGTH}. */
  public static final EnvVar MAX_NAME_LENGTH = EnvVar.of("WEIR_MAX_NAME_LENGTH");

  /** {@code WEIR_MAX_KEY_LENGTH}. */
  public static final EnvVar MAX_KEY_LENGTH = EnvVar.of("WEIR_MAX_KEY_LENGTH");

  /** {@code WEIR_MAX_DESCRIPTOR_ENTRIES}. */
  public static final EnvVar MAX_DESCRIPTOR_ENTRIES = EnvVar.of("WEIR_MAX_DESCRIPTOR_ENTRIES");

  /** {@code WEIR_MAX_DESCRIPTOR_VALUE_LENGTH}. */
  public static final EnvVar MAX_DESCRIPTOR_VALUE_LENGTH =
      EnvVar.of("WEIR_MAX_DESCRIPTOR_VALUE_LENGTH");

  /**
   * The most {@code WEIR_MAX_NAME_LENGTH} and {@code WEIR_MAX_KEY_LENGTH} may each be set to, 8192:
   * a call between nodes of 1000 items (a forwarded batch, a GLOBAL chunk, whose updates carry each
   * key twice, a hand-off chunk) with names and keys this long then takes at most 35 MB, about half
   * the peer message cap ({@code PeerSecurity.MAX_MESSAGE_BYTES}, 64 MiB).
   */
  public static final int LONGEST_NAME_OR_KEY = 8192;

  /**
   * 4 MiB: room for a full batch of 1000 items with the default longest names and keys (1024 bytes
   * each); a client that sends full batches of longer ones needs a larger {@code
   * WEIR_GRPC_MAX_MESSAGE_SIZE}.
   */
  public static final int DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

  /** The defaults. */
  public static final InputLimits DEFAULTS =
      new InputLimits(DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_MESSAGE_BYTES, 1024, 1024, 64, 256);

  /** Reads the limits from {@code env}, each unset one taking its default. */
  public static InputLimits from(EnvReader env) {
    return new InputLimits(
        env.intInRange(GRPC_MAX_MESSAGE_SIZE, DEFAULTS.maxGrpcMessageBytes, 65_536, 64 << 20),
        env.intInRange(HTTP_MAX_BODY_SIZE, DEFAULTS.maxHttpBodyBytes, 1024, 4 << 20),
        nameOrKeyLength(env, MAX_NAME_LENGTH, DEFAULTS.maxNameBytes),
        nameOrKeyLength(env, MAX_KEY_LENGTH, DEFAULTS.maxKeyBytes),
        env.intInRange(MAX_DESCRIPTOR_ENTRIES, DEFAULTS.maxDescriptorEntries, 1, 1024),
        env.intInRange(MAX_DESCRIPTOR_VALUE_LENGTH, DEFAULTS.maxDescriptorValueBytes, 1, 65_536));
  }

  private static int nameOrKeyLength(EnvReader env, EnvVar var, int fallback) {
    try {
      return env.intInRange(var, fallback, 1, LONGEST_NAME_OR_KEY);
    } catch (ConfigException e) {
      throw new ConfigException(
          e.getMessage()
              + " (so that 1000 items with the longest name and key fit in one call between"
              + " nodes, at most 64 MiB)");
    }
  }

  /** Returns the error of a native item whose {@code name} or {@code unique_key} is too long. */
  public Optional<String> checkItem(RateLimitRequest request) {
    String error = tooLong("name", request.name(), maxNameBytes, MAX_NAME_LENGTH);
    if (error == null) {
      error = tooLong("unique_key", request.uniqueKey(), maxKeyBytes, MAX_KEY_LENGTH);
    }
    return Optional.ofNullable(error);
  }

  /**
   * Returns the error of a field {@code value} longer than {@code max} UTF-8 bytes, or null: {@code
   * field 'unique_key' is 2000 bytes long; at most 1024 are allowed (WEIR_MAX_KEY_LENGTH)}.
   */
  public static String tooLong(String field, String value, int max, EnvVar setting) {
    if (value.length() <= max / 3) {
      return null;
    }
    int bytes = value.getBytes(StandardCharsets.UTF_8).length;
    if (bytes <= max) {
      return null;
    }
    return "field '"
        + field
        + "' is "
        + bytes
        + " bytes long; at most "
        + max
        + " are allowed ("
        + setting.name()
        + ")";
  }
}
