package dev.weir.core.cluster.peer.auth;

import dev.weir.core.config.IpText;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An allow-list of peer identities: the subject alternative names (DNS names, URIs such as SPIFFE
 * IDs, IP addresses) a peer's TLS client certificate must carry one of.
 *
 * <p>A pattern opening with a URI scheme and {@code ':'} ({@code spiffe://…}, {@code urn:uuid:…})
 * is a URI, unless only digits follow the {@code ':'} ({@code weir-0.weir.svc:1052}, a port) or it
 * is spelt as an IPv6 address. A pattern is matched whole. In a DNS pattern ({@code *.weir.svc.cluster.local}) a {@code *}
 * label stands for exactly one label and names compare case-insensitively; in a URI pattern ({@code
 * spiffe://cluster.local/ns/weir/sa/*}) a {@code *} segment stands for exactly one non-empty
 * segment. A {@code *} must be a whole label or segment, and a pattern must name more than a
 * wildcard. An IP address matches the same address however either spells it ({@code fd00::7},
 * {@code FD00:0:0::7}). The names of this node's own certificate ({@link #ofCertificate}) are no
 * patterns: each allows only itself.
 */
public final class PeerIdentities {

  private static final int DNS = 2;
  private static final int URI = 6;
  private static final int IP = 7;

  /** What a pattern may be, as errors say. */
  static final String ALLOWED =
      "allowed: a DNS name, a URI such as a SPIFFE ID or one IP address, each whole, '*' standing"
          + " for one DNS label or URI path segment";

  private static final Pattern DNS_LABEL = Pattern.compile("[A-Za-z0-9_-]+");
  private static final Pattern URI_SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*:");
  private static final Pattern PORT = Pattern.compile("[0-9]*");
  private static final Pattern IPV6_SPELT = Pattern.compile("[0-9A-Fa-f.]*:[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*");

  private final List<String> patterns;
  private final boolean literal;

  private PeerIdentities(List<String> patterns, boolean literal) {
    this.patterns = List.copyOf(patterns);
    this.literal = literal;
  }

  /** The allow-list that allows no identity: the names of a certificate that has none. */
  static final PeerIdentities NONE = new PeerIdentities(List.of(), true);

  /**
   * Returns the allow-list of {@code patterns}.
   *
   * @throws IllegalArgumentException naming the first bad pattern and what is wrong with it
   */
  public static PeerIdentities of(Collection<String> patterns) {
    if (patterns.isEmpty()) {
      throw new IllegalArgumentException("the allow-list of peer identities is empty");
    }
    List<String> checked = new ArrayList<>();
    for (String pattern : patterns) {
      checked.add(check(pattern.trim()));
    }
    return new PeerIdentities(checked, false);
  }

  /**
   * Returns the allow-list of the identities {@code certificate} carries (its DNS, URI and IP
   * subject alternative names), exactly: the default, under which members sharing one certificate
   * (or certificates with the same names) accept each other. Its names are not patterns: a {@code
   * *} in them (a wildcard certificate's {@code *.weir.svc}) allows a peer carrying that very name,
   * not every name it would cover.
   *
   * @throws IllegalArgumentException when the certificate carries no such name
   */
  public static PeerIdentities ofCertificate(X509Certificate certificate) {
    List<String> names = identitiesOf(certificate);
    if (names.isEmpty()) {
      throw new IllegalArgumentException(
          "this node's certificate ("
              + certificate.getSubjectX500Principal()
              + ") has no DNS, URI or IP subject alternative name, the names peers allow the node"
              + " calling them by, whatever their allow-list, so every peer would refuse this"
              + " node's calls; use a certificate with a DNS, URI or IP subject alternative name");
    }
    return new PeerIdentities(names, true);
  }

  /**
   * Returns the DNS names, URIs and IP addresses among {@code certificate}'s alternative names; IP
   * addresses in {@link IpText#of} text ({@code fd00::7}, not the JDK's {@code fd00:0:0:0:0:0:0:7}).
   */
  public static List<String> identitiesOf(X509Certificate certificate) {
    Collection<List<?>> names;
    try {
      names = certificate.getSubjectAlternativeNames();
    } catch (CertificateParsingException e) {
      return List.of();
    }
    if (names == null) {
      return List.of();
    }
    List<String> out = new ArrayList<>();
    for (List<?> name : names) {
      if (name.size() >= 2
          && name.get(0) instanceof Integer type
          && (type == DNS || type == URI || type == IP)
          && name.get(1) instanceof String value) {
        out.add(type == IP ? IpText.canonical(value).orElse(value) : value);
      }
    }
    return out;
  }

  /** Returns the patterns, as given. */
  public List<String> patterns() {
    return patterns;
  }

  /** Returns whether any of {@code identities} matches a pattern. */
  public boolean allowsAny(Collection<String> identities) {
    for (String identity : identities) {
      for (String pattern : patterns) {
        if (literal ? sameName(pattern, identity) : matches(pattern, identity)) {
          return true;
        }
      }
    }
    return false;
  }

  /** Returns whether {@code identity} matches {@code pattern} under the rules above. */
  static boolean matches(String pattern, String identity) {
    if (isUri(pattern) != isUri(identity)) {
      return false;
    }
    Optional<String> ip = IpText.canonical(pattern);
    if (ip.isPresent()) {
      return ip.equals(IpText.canonical(identity));
    }
    if (isUri(pattern)) {
      return partsMatch(pattern.split("/", -1), identity.split("/", -1), false);
    }
    return partsMatch(pattern.split("\\.", -1), identity.split("\\.", -1), true);
  }

  /**
   * Returns whether {@code identity} is the very name {@code name}, a {@code *} in it included: IP
   * addresses by address, DNS names ignoring case, URIs exactly.
   */
  static boolean sameName(String name, String identity) {
    if (isUri(name) != isUri(identity)) {
      return false;
    }
    if (isUri(name)) {
      return name.equals(identity);
    }
    Optional<String> ip = IpText.canonical(name);
    if (ip.isPresent()) {
      return ip.equals(IpText.canonical(identity));
    }
    return name.equalsIgnoreCase(identity);
  }

  private static boolean partsMatch(String[] pattern, String[] identity, boolean ignoreCase) {
    if (pattern.length != identity.length) {
      return false;
    }
    for (int i = 0; i < pattern.length; i++) {
      if (pattern[i].equals("*")) {
        if (identity[i].isEmpty()) {
          return false;
        }
      } else if (ignoreCase
          ? !pattern[i].equalsIgnoreCase(identity[i])
          : !pattern[i].equals(identity[i])) {
        return false;
      }
    }
    return true;
  }

  private static String check(String pattern) {
    if (pattern.isEmpty()) {
      throw new IllegalArgumentException("a peer identity pattern is empty");
    }
    if (IpText.canonical(pattern).isPresent()) {
      return pattern;
    }
    checkForm(pattern);
    String[] parts = isUri(pattern) ? pattern.split("/", -1) : pattern.split("\\.", -1);
    boolean named = false;
    for (String part : parts) {
      if (part.contains("*") && !part.equals("*")) {
        throw new IllegalArgumentException(
            "peer identity pattern '"
                + pattern
                + "': '*' must be a whole "
                + (isUri(pattern) ? "path segment" : "DNS label")
                + ", got '"
                + part
                + "'");
      }
      named |= !part.isEmpty() && !part.equals("*") && !part.endsWith(":");
    }
    if (!named) {
      throw new IllegalArgumentException(
          "peer identity pattern '" + pattern + "' names nothing but wildcards");
    }
    return pattern;
  }

  /**
   * Refuses a pattern no certificate name could match: text with a space or control character,
   * and, outside URIs, a {@code ','}, a CIDR range, a port or an empty DNS label.
   */
  private static void checkForm(String pattern) {
    for (int i = 0; i < pattern.length(); i++) {
      char c = pattern.charAt(i);
      if (Character.isWhitespace(c) || Character.isISOControl(c)) {
        throw unmatchable(pattern, "contains a space or control character");
      }
    }
    if (isUri(pattern)) {
      return;
    }
    if (pattern.indexOf(',') >= 0) {
      throw unmatchable(pattern, "contains a ',' outside a URI");
    }
    if (pattern.indexOf('/') >= 0) {
      throw unmatchable(pattern, "is a CIDR range or has a '/' outside a URI");
    }
    if (pattern.indexOf(':') >= 0) {
      throw unmatchable(pattern, "has a port or is a malformed IPv6 address");
    }
    for (String label : pattern.split("\\.", -1)) {
      if (label.isEmpty()) {
        throw unmatchable(pattern, "has an empty DNS label");
      }
      if (!label.equals("*") && !label.contains("*") && !DNS_LABEL.matcher(label).matches()) {
        throw unmatchable(
            pattern, "has the DNS label '" + label + "' (letters, digits, '-' and '_' only)");
      }
    }
  }

  private static IllegalArgumentException unmatchable(String pattern, String problem) {
    return new IllegalArgumentException(
        "peer identity pattern '"
            + pattern
            + "' "
            + problem
            + ", so no certificate name can match it; CIDR ranges and ports are not identities ("
            + ALLOWED
            + ")");
  }

  /**
   * Returns whether {@code s} is a URI: text opening with an RFC 3986 scheme and {@code ':'}, what
   * follows that {@code ':'} holding more than digits (a {@code host:port} is no URI), and whose
   * part before any {@code '/'} is not spelt as an IPv6 address (an IP literal or a CIDR range).
   */
  private static boolean isUri(String s) {
    Matcher scheme = URI_SCHEME.matcher(s);
    if (!scheme.lookingAt() || PORT.matcher(s.substring(scheme.end())).matches()) {
      return false;
    }
    int slash = s.indexOf('/');
    return !IPV6_SPELT.matcher(slash < 0 ? s : s.substring(0, slash)).matches();
  }

  @Override
  public String toString() {
    return String.join(",", patterns);
  }
}
