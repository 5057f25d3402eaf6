package dev.weir.http;

import com.google.gson.stream.MalformedJsonException;
import java.io.EOFException;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The message a client is shown for a JSON body that was refused: the refusal's own words, but a
 * syntax error's without the Java exception name and the Gson troubleshooting link Gson and
 * protobuf-java pass on ({@code com.google.gson.stream.MalformedJsonException: Expected name at
 * line 1 column 27 path $.requests[0].name\nSee https://github.com/google/gson/...}), which mean
 * nothing to a client, and saying that the JSON is malformed instead. Another refusal's message
 * is shown without a leading Java exception name ({@code java.lang.NumberFormatException: }).
 */
public final class ParserMessages {

  /** What the message of a syntax error starts with. */
  public static final String MALFORMED = "malformed JSON";

  /** The message for a refusal that carries none. */
  public static final String NO_MESSAGE = "the body is not a valid request";

  private static final Pattern GSON_LINK =
      Pattern.compile("\\s*See https://github\\.com/google/gson/\\S*\\s*$");
  private static final Pattern LENIENT_HINT =
      Pattern.compile("^Use JsonReader\\.setStrictness\\(Strictness\\.LENIENT\\) to accept"
          + " malformed JSON|^Use JsonReader\\.setLenient\\(true\\) to accept malformed JSON");
  private static final Pattern STRICT_MODE = Pattern.compile(" in strict mode\\b");
  private static final Pattern EXCEPTION_NAME =
      Pattern.compile("^(?:[a-z_$][\\w$]*\\.)+[A-Z][\\w$]*(?:Exception|Error): ");

  private ParserMessages() {}

  /**
   * Returns the message for a body refused with {@code refusal}: {@code malformed JSON: Expected
   * name at line 1 column 27 path $.requests[0].name} when its cause chain holds Gson's {@link
   * MalformedJsonException} or an {@link EOFException}; any other refusal's message without a
   * leading exception name ({@code pkg.NameException: });
   * {@value #NO_MESSAGE} for {@code null} or a refusal without a message.
   */
  public static String of(Throwable refusal) {
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    for (Throwable cause = refusal; cause != null && seen.add(cause); cause = cause.getCause()) {
      if (cause instanceof MalformedJsonException || cause instanceof EOFException) {
        return malformed(cause.getMessage());
      }
    }
    if (refusal == null || refusal.getMessage() == null) {
      return NO_MESSAGE;
    }
    return EXCEPTION_NAME.matcher(refusal.getMessage()).replaceFirst("");
  }

  /**
   * Returns {@code malformed JSON: } and Gson's {@code reason} for a syntax error, without its
   * troubleshooting link, with its advice to read leniently replaced by what was refused, and
   * with {@code in strict mode} replaced by {@code (RFC 8259)}.
   */
  static String malformed(String reason) {
    if (reason == null) {
      return MALFORMED;
    }
    String text = GSON_LINK.matcher(reason).replaceFirst("");
    text = LENIENT_HINT.matcher(text).replaceFirst("not standard JSON (RFC 8259)");
    text = STRICT_MODE.matcher(text).replaceAll(" (RFC 8259)");
    return MALFORMED + ": " + text;
  }
}
