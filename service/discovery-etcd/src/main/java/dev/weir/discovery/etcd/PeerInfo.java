package dev.weir.discovery.etcd;

import dev.weir.core.config.HostPort;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The value a node registers under its etcd key: Gubernator's {@code PeerInfo} fields ({@code
 * grpc-address}, {@code data-center}), Weir's {@code peer_address} (absent from Gubernator's and
 * older Weir registrations), and the same address and data center under {@code grpc_address} and
 * {@code data_center}, the names Weir versions before this one read, so that they keep reading
 * registrations of this version during a rolling upgrade. Either spelling is read.
 *
 * @param grpcAddress the node's advertised gRPC address
 * @param dataCenter the node's data center, possibly empty
 * @param peerAddress the address of the node's peer listener, empty when not registered
 */
record PeerInfo(String grpcAddress, String dataCenter, String peerAddress) {

  /** The fields read, each a string or {@code null}. */
  private static final Set<String> KNOWN_FIELDS =
      Set.of("grpc-address", "grpc_address", "data-center", "data_center", "peer_address");

  private static final List<String> LITERALS = List.of("true", "false", "null");

  private static final Pattern NUMBER =
      Pattern.compile("-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?");

  /** How many characters of a refused value its error shows. */
  private static final int SHOWN_CHARS = 40;

  /** Creates the info of a node that registers no peer listener address. */
  PeerInfo(String grpcAddress, String dataCenter) {
    this(grpcAddress, dataCenter, "");
  }

  /** Returns this info as a JSON object. */
  String toJson() {
    return "{\"grpc-address\":"
        + quote(grpcAddress)
        + ",\"data-center\":"
        + quote(dataCenter)
        + (peerAddress.isEmpty() ? "" : ",\"peer_address\":" + quote(peerAddress))
        + ",\"grpc_address\":"
        + quote(grpcAddress)
        + ",\"data_center\":"
        + quote(dataCenter)
        + "}";
  }

  /**
   * Reads the value of a registration: a JSON object or, as Gubernator reads the registrations of
   * its older versions, a bare gRPC address ({@code host:port}), the member's address with no data
   * center. The object's fields are read as Gubernator's {@code json.Unmarshal} reads them:
   * Gubernator's names ({@code grpc-address}, {@code data-center}) before older Weir's ({@code
   * grpc_address}, {@code data_center}), {@code null} as an absent field, any other field, of any
   * JSON type, ignored (Gubernator's {@code is-owner}, {@code http-address}); a known field that is
   * neither a string nor {@code null} is refused.
   *
   * @throws IllegalArgumentException saying why {@code value} is neither
   */
  static PeerInfo read(String value) {
    return read(value, problem -> {});
  }

  /**
   * Reads the value of a registration as {@link #read(String)} does, passing {@code problems} why a
   * {@code peer_address} that is no address gRPC can call was read as absent: the member stays on
   * the ring at its gRPC address, as older Weir versions and Gubernator, which do not read the
   * field, keep it, and is called at its host on this node's peer port.
   *
   * @throws IllegalArgumentException saying why {@code value} is no registration
   */
  static PeerInfo read(String value, Consumer<String> problems) {
    String text = value.strip();
    if (text.startsWith("{")) {
      try {
        return parseObject(text, problems);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("a \\u escape is not 4 hex digits", e);
      }
    }
    try {
      HostPort.parseGrpcTarget(text);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "not a JSON object, nor a bare host:port address (" + e.getMessage() + ")", e);
    }
    return new PeerInfo(text, "");
  }

  private static PeerInfo parseObject(String json, Consumer<String> problems) {
    Map<String, String> fields = new HashMap<>();
    int[] at = {skip(json, 0)};
    if (at[0] >= json.length() || json.charAt(at[0]) != '{') {
      throw new IllegalArgumentException("not a JSON object");
    }
    at[0] = skip(json, at[0] + 1);
    while (at[0] < json.length() && json.charAt(at[0]) != '}') {
      int nameAt = at[0];
      String name = string(json, at);
      if (name == null) {
        throw new IllegalArgumentException(
            "expected a field name in double quotes at character " + nameAt);
      }
      at[0] = skip(json, at[0]);
      if (at[0] >= json.length() || json.charAt(at[0]) != ':') {
        throw new IllegalArgumentException(
            "expected ':' after the field name \"" + name + "\" at character " + at[0]);
      }
      int valueAt = skip(json, at[0] + 1);
      int end = skipValue(json, valueAt);
      if (end < 0) {
        throw new IllegalArgumentException(
            "the field \"" + name + "\" has no JSON value at character " + valueAt);
      }
      String raw = json.substring(valueAt, end);
      if (KNOWN_FIELDS.contains(name) && !raw.equals("null")) {
        at[0] = valueAt;
        String value = string(json, at);
        if (value == null) {
          throw new IllegalArgumentException(
              "the field \""
                  + name
                  + "\" is "
                  + abbreviate(raw)
                  + " (character "
                  + valueAt
                  + "): it must be a string, or null");
        }
        fields.put(name, value);
      }
      at[0] = skip(json, end);
      if (at[0] < json.length() && json.charAt(at[0]) == ',') {
        at[0] = skip(json, at[0] + 1);
      }
    }
    String address = either(fields, "grpc-address", "grpc_address");
    if (address.isEmpty()) {
      throw new IllegalArgumentException("no grpc-address (or grpc_address) field with an address");
    }
    String addressField =
        fields.getOrDefault("grpc-address", "").isEmpty() ? "grpc_address" : "grpc-address";
    checkAddress(addressField, address);
    String peerAddress = fields.getOrDefault("peer_address", "");
    if (!peerAddress.isEmpty()) {
      try {
        checkAddress("peer_address", peerAddress);
      } catch (IllegalArgumentException e) {
        problems.accept(e.getMessage() + "; read as absent");
        peerAddress = "";
      }
    }
    return new PeerInfo(address, either(fields, "data-center", "data_center"), peerAddress);
  }

  // Refuses a field's value that no gRPC channel can call, naming the field and the value.
  private static void checkAddress(String field, String value) {
    try {
      HostPort.parseGrpcTarget(value);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "the field \""
              + field
              + "\" is "
              + abbreviate(quote(value))
              + ": it must be a host:port address gRPC can call ("
              + e.getMessage()
              + ")",
          e);
    }
  }

  // The first non-empty value of the two names, else empty.
  private static String either(Map<String, String> fields, String gubernator, String olderWeir) {
    String value = fields.getOrDefault(gubernator, "");
    return value.isEmpty() ? fields.getOrDefault(olderWeir, "") : value;
  }

  /**
   * Returns the end of the JSON value (string, number, literal, object or array, nested to any
   * depth) starting at {@code at}, or -1 when there is none.
   */
  private static int skipValue(String s, int at) {
    Deque<Character> open = new ArrayDeque<>();
    while (true) {
      if (at >= s.length()) {
        return -1;
      }
      char c = s.charAt(at);
      if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        at = skip(s, at + 1);
        if (at < s.length() && s.charAt(at) == close) {
          at++;
        } else {
          open.push(close);
          at = close == '}' ? member(s, at) : at;
          if (at < 0) {
            return -1;
          }
          continue;
        }
      } else {
        at = scalar(s, at);
        if (at < 0) {
          return -1;
        }
      }
      while (true) {
        if (open.isEmpty()) {
          return at;
        }
        at = skip(s, at);
        if (at >= s.length()) {
          return -1;
        }
        char next = s.charAt(at);
        if (next == ',') {
          at = skip(s, at + 1);
          at = open.peek() == '}' ? member(s, at) : at;
          if (at < 0) {
            return -1;
          }
          break;
        }
        if (next != open.peek()) {
          return -1;
        }
        open.pop();
        at++;
      }
    }
  }

  /** Returns where the value of the object member whose name starts at {@code at} starts, or -1. */
  private static int member(String s, int at) {
    int[] end = {at};
    if (string(s, end) == null) {
      return -1;
    }
    int colon = skip(s, end[0]);
    if (colon >= s.length() || s.charAt(colon) != ':') {
      return -1;
    }
    return skip(s, colon + 1);
  }

  /** Returns the end of the string, number or literal starting at {@code at}, or -1. */
  private static int scalar(String s, int at) {
    if (s.charAt(at) == '"') {
      int[] end = {at};
      return string(s, end) == null ? -1 : end[0];
    }
    for (String literal : LITERALS) {
      if (s.startsWith(literal, at)) {
        return at + literal.length();
      }
    }
    Matcher number = NUMBER.matcher(s).region(at, s.length());
    return number.lookingAt() ? number.end() : -1;
  }

  private static String abbreviate(String raw) {
    return raw.length() <= SHOWN_CHARS ? raw : raw.substring(0, SHOWN_CHARS) + "...";
  }

  private static int skip(String s, int at) {
    while (at < s.length() && Character.isWhitespace(s.charAt(at))) {
      at++;
    }
    return at;
  }

  private static String string(String s, int[] at) {
    if (at[0] >= s.length() || s.charAt(at[0]) != '"') {
      return null;
    }
    StringBuilder out = new StringBuilder();
    int i = at[0] + 1;
    while (i < s.length()) {
      char c = s.charAt(i);
      if (c == '"') {
        at[0] = i + 1;
        return out.toString();
      }
      if (c == '\\' && i + 1 < s.length()) {
        char e = s.charAt(++i);
        switch (e) {
          case 'n' -> out.append('\n');
          case 't' -> out.append('\t');
          case 'r' -> out.append('\r');
          case 'b' -> out.append('\b');
          case 'f' -> out.append('\f');
          case 'u' -> {
            if (i + 4 >= s.length()) {
              return null;
            }
            out.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
            i += 4;
          }
          default -> out.append(e);
        }
      } else {
        out.append(c);
      }
      i++;
    }
    return null;
  }

  private static String quote(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }
}
