package dev.weir.http;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The message a client is shown for a JSON body protobuf-java's parser refused: the parser's own
 * words, but a syntax error's without the Java exception name and the Gson troubleshooting link
 * protobuf-java passes on ({@code com.google.gson.stream.MalformedJsonException: Expected name at
 * line 1 column 27 path $.requests[0].name\nSee https://github.com/google/gson/...}), which mean
 * nothing to a client, and saying that the JSON is malformed instead.
 */
public final class ParserMessages {

  private static final Pattern EXCEPTION_NAME =
      Pattern.compile("^(?:[a-z][\\w$]*\\.)+[A-Z][\\w$]*(?:Exception|Error): ");
  private static final Pattern GSON_LINK =
      Pattern.compile("\\s*See https://github\\.com/google/gson/\\S*\\s*$");

  private ParserMessages() {}

  /**
   * Returns the message for a body the parser refused with {@code parserMessage}: {@code malformed
   * JSON: Expected name at line 1 column 27 path $.requests[0].name} for a syntax error, any other
   * message as it is ({@code null} as {@code "null"}).
   */
  public static String of(String parserMessage) {
    if (parserMessage == null) {
      return "null";
    }
    Matcher name = EXCEPTION_NAME.matcher(parserMessage);
    if (!name.find()) {
      return parserMessage;
    }
    String reason = GSON_LINK.matcher(parserMessage.substring(name.end())).replaceFirst("");
    return "malformed JSON: " + reason;
  }
}
