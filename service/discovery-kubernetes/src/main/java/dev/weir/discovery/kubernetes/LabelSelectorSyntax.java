package dev.weir.discovery.kubernetes;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The syntax of a Kubernetes label selector, as the API server's parser accepts it: requirements
 * separated by commas, each {@code key}, {@code !key}, {@code key=value}, {@code key==value}, {@code
 * key!=value}, {@code key in (v1,v2)}, {@code key notin (v1,v2)}, {@code key>n} or {@code key<n}
 * ({@code n} from 0 to 2^63-1 in decimal digits).
 */
final class LabelSelectorSyntax {
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?");
  private static final Pattern DNS_SUBDOMAIN =
      Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  // The API server parses the value of '<' and '>' as a 64-bit integer and checks it as a label
  // value, which cannot start with '-' or '+'.
  private static final Pattern DIGITS = Pattern.compile("[0-9]+");
  private static final String SPECIAL = "!=(),<>";

  private final List<String> tokens;
  private int at;

  private LabelSelectorSyntax(List<String> tokens) {
    this.tokens = tokens;
  }

  /** Returns what makes {@code selector} no label selector, or empty when it is one. */
  static Optional<String> problem(String selector) {
    LabelSelectorSyntax parser = new LabelSelectorSyntax(tokenize(selector));
    try {
      parser.selector();
      return Optional.empty();
    } catch (IllegalArgumentException e) {
      return Optional.of(e.getMessage());
    }
  }

  /** Returns whether {@code value} is a label value: empty, or up to 63 characters of {@link #NAME}. */
  static boolean isLabelValue(String value) {
    return value.isEmpty() || (value.length() <= 63 && NAME.matcher(value).matches());
  }

  private void selector() {
    if (tokens.isEmpty()) {
      throw new IllegalArgumentException("it is empty");
    }
    requirement();
    while (at < tokens.size()) {
      expect(",");
      if (at == tokens.size()) {
        throw new IllegalArgumentException("it ends with ','");
      }
      requirement();
    }
  }

  private void requirement() {
    if (peek().equals("!")) {
      at++;
      key();
      return;
    }
    key();
    String op = peek();
    switch (op) {
      case "", "," -> {}
      case "=", "==", "!=" -> {
        at++;
        String next = peek();
        if (!next.isEmpty() && !next.equals(",")) {
          value(identifier("a value"));
        }
      }
      case "in", "notin" -> {
        at++;
        expect("(");
        while (!peek().equals(")")) {
          if (!peek().equals(",")) {
            value(identifier("a value or ')'"));
          }
          if (peek().equals(",")) {
            at++;
          } else if (!peek().equals(")")) {
            throw unexpected("',' or ')'");
          }
        }
        at++;
      }
      case "<", ">" -> {
        at++;
        String n = identifier("an integer");
        if (!isInt64Digits(n)) {
          throw new IllegalArgumentException(
              "'" + n + "' after '" + op + "' is not an integer from 0 to " + Long.MAX_VALUE
                  + ": the API server takes a label value, digits only");
        }
      }
      default -> throw unexpected("an operator (=, ==, !=, in, notin, <, >) or ','");
    }
  }

  private static boolean isInt64Digits(String n) {
    if (!DIGITS.matcher(n).matches()) {
      return false;
    }
    try {
      Long.parseLong(n);
      return true;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  private void key() {
    String key = identifier("a label key");
    int slash = key.indexOf('/');
    String name = slash < 0 ? key : key.substring(slash + 1);
    String prefix = slash < 0 ? "" : key.substring(0, slash);
    boolean prefixOk =
        slash < 0 || (prefix.length() <= 253 && DNS_SUBDOMAIN.matcher(prefix).matches());
    if (!prefixOk || name.length() > 63 || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "'" + key + "' is not a label key ([prefix/]name; name up to 63 letters, digits, '-', '_'"
              + " and '.', starting and ending with a letter or digit)");
    }
  }

  private void value(String value) {
    if (!isLabelValue(value)) {
      throw new IllegalArgumentException(
          "'" + value + "' is not a label value (up to 63 letters, digits, '-', '_' and '.', starting"
              + " and ending with a letter or digit)");
    }
  }

  private String identifier(String what) {
    String token = peek();
    if (token.isEmpty() || (token.length() == 1 && SPECIAL.contains(token)) || isOperator(token)) {
      throw unexpected(what);
    }
    at++;
    return token;
  }

  private void expect(String token) {
    if (!peek().equals(token)) {
      throw unexpected("'" + token + "'");
    }
    at++;
  }

  private IllegalArgumentException unexpected(String expected) {
    String found = at < tokens.size() ? "'" + tokens.get(at) + "'" : "the end";
    String after = at == 0 ? "at the start" : "after '" + String.join(" ", tokens.subList(0, at)) + "'";
    return new IllegalArgumentException(after + ": expected " + expected + " but found " + found);
  }

  private String peek() {
    return at < tokens.size() ? tokens.get(at) : "";
  }

  private static boolean isOperator(String token) {
    return token.equals("==") || token.equals("!=");
  }

  private static List<String> tokenize(String selector) {
    List<String> tokens = new ArrayList<>();
    int i = 0;
    while (i < selector.length()) {
      char c = selector.charAt(i);
      if (Character.isWhitespace(c)) {
        i++;
      } else if ((c == '=' || c == '!') && i + 1 < selector.length() && selector.charAt(i + 1) == '=') {
        tokens.add(selector.substring(i, i + 2));
        i += 2;
      } else if (SPECIAL.indexOf(c) >= 0) {
        tokens.add(String.valueOf(c));
        i++;
      } else {
        int start = i;
        while (i < selector.length()
            && !Character.isWhitespace(selector.charAt(i))
            && SPECIAL.indexOf(selector.charAt(i)) < 0) {
          i++;
        }
        tokens.add(selector.substring(start, i));
      }
    }
    return tokens;
  }
}
