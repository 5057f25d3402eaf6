package dev.weir.envoy.testkit;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.greenbytes.http.sfv.ByteSequenceItem;
import org.greenbytes.http.sfv.IntegerItem;
import org.greenbytes.http.sfv.Item;
import org.greenbytes.http.sfv.ListElement;
import org.greenbytes.http.sfv.Parser;
import org.greenbytes.http.sfv.StringItem;
import org.greenbytes.http.sfv.TokenItem;

/**
 * A checker of the {@code RateLimit-Policy} and {@code RateLimit} fields of
 * draft-ietf-httpapi-ratelimit-headers-10: the value is parsed by a strict structured-field parser
 * (greenbytes' RFC 8941 one) and each member is held to the draft's schema, so a value that would
 * parse but mean nothing to a client fails too.
 */
public final class RateLimitFieldsSyntax {

  /**
   * One member of either field.
   *
   * @param name the policy name (the Item's String value)
   * @param integers its Integer parameters by key, in order
   */
  public record Member(String name, Map<String, Long> integers) {

    /** Returns the member as {@code name;key=value...}, for compact assertions. */
    @Override
    public String toString() {
      StringBuilder out = new StringBuilder(name);
      integers.forEach((k, v) -> out.append(';').append(k).append('=').append(v));
      return out.toString();
    }
  }

  private RateLimitFieldsSyntax() {}

  /**
   * Parses a {@code RateLimit-Policy} value: a non-empty List of Items, each a String with an
   * Integer {@code q} (required, at least 0), an Integer {@code w} (at least 1), a Token {@code qu}
   * and a Byte Sequence {@code pk}, and no other parameter.
   */
  public static List<Member> policy(String value) {
    return parse(value, "q", Map.of("q", 0L, "w", 1L));
  }

  /**
   * Parses a {@code RateLimit} value: a non-empty List of Items, each a String with an Integer
   * {@code r} (required, at least 0), an Integer {@code t} (at least 0) and a Byte Sequence {@code
   * pk}, and no other parameter.
   */
  public static List<Member> limit(String value) {
    return parse(value, "r", Map.of("r", 0L, "t", 0L));
  }

  private static List<Member> parse(String value, String required, Map<String, Long> minimums) {
    List<ListElement<? extends Object>> elements = Parser.parseList(value).get();
    if (elements.isEmpty()) {
      throw new AssertionError("empty list: " + value);
    }
    List<Member> members = new ArrayList<>();
    for (ListElement<? extends Object> element : elements) {
      if (!(element instanceof StringItem item)) {
        throw new AssertionError("member is not a String Item: " + element.serialize());
      }
      Map<String, Long> integers = new LinkedHashMap<>();
      item.getParams()
          .forEach(
              (key, param) -> {
                if (minimums.containsKey(key)) {
                  integers.put(key, integer(key, param, minimums.get(key)));
                } else if (key.equals("pk")) {
                  check(param instanceof ByteSequenceItem, "pk is not a Byte Sequence", param);
                } else if (key.equals("qu") && required.equals("q")) {
                  check(param instanceof TokenItem, "qu is not a Token", param);
                } else {
                  throw new AssertionError("unknown parameter " + key + " in " + value);
                }
              });
      check(integers.containsKey(required), "no " + required, item);
      members.add(new Member(item.get(), integers));
    }
    return members;
  }

  private static long integer(String key, Item<?> param, long minimum) {
    check(param instanceof IntegerItem, key + " is not an Integer", param);
    long v = ((IntegerItem) param).getAsLong();
    check(v >= minimum, key + " is below " + minimum, param);
    return v;
  }

  private static void check(boolean ok, String what, Item<?> item) {
    if (!ok) {
      throw new AssertionError(what + ": " + item.serialize());
    }
  }
}
