package dev.weir.envoy.metrics;

import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * envoyproxy/ratelimit's stat names: {@code ratelimit.service.rate_limit.<domain>.<rule>.<stat>}
 * per rule (the rule label as {@link dev.weir.envoy.service.StatsKeys} writes it), {@code
 * ratelimit.service.<stat>} for the service, each followed by the extra tags as its StatsD library
 * (lyft/gostats) writes them ({@code .__key=value}, sorted by key). Domains and rules are cleaned
 * as the reference cleans them: {@code :} and {@code |} become {@code _}, and so do the dots of an
 * IPv4 address.
 */
public final class ReferenceStatNames {

  /** The prefix of every per-rule stat. */
  public static final String RULE_PREFIX = "ratelimit.service.rate_limit.";

  /** The prefix of every service stat. */
  public static final String SERVICE_PREFIX = "ratelimit.service.";

  private static final Pattern IPV4 = Pattern.compile("\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}");

  private final String tagSuffix;

  /** Creates the names, each followed by {@code extraTags}. */
  public ReferenceStatNames(Map<String, String> extraTags) {
    StringBuilder suffix = new StringBuilder();
    new TreeMap<>(extraTags)
        .forEach(
            (k, v) ->
                suffix
                    .append(".__")
                    .append(withoutControls(k))
                    .append('=')
                    .append(withoutControls(v.replaceAll("[.:|]", "_"))));
    this.tagSuffix = suffix.toString();
  }

  /** Returns the name of {@code stat} (such as {@code total_hits}) of {@code rule} in {@code domain}. */
  public String rule(String domain, String rule, String stat) {
    return RULE_PREFIX + sanitize(domain) + "." + sanitize(rule) + "." + stat + tagSuffix;
  }

  /** Returns the name of the service stat {@code stat} (such as {@code config_load_success}). */
  public String service(String stat) {
    return SERVICE_PREFIX + stat + tagSuffix;
  }

  /**
   * Returns {@code name} with the characters StatsD reserves, control characters (a newline would
   * end the line and start another metric) and IPv4 dots replaced by {@code _}.
   */
  static String sanitize(String name) {
    String out = withoutControls(name.replace(':', '_').replace('|', '_'));
    Matcher ip = IPV4.matcher(out);
    if (!ip.find()) {
      return out;
    }
    StringBuilder sb = new StringBuilder();
    do {
      ip.appendReplacement(sb, Matcher.quoteReplacement(ip.group().replace('.', '_')));
    } while (ip.find());
    ip.appendTail(sb);
    return sb.toString();
  }

  private static String withoutControls(String text) {
    StringBuilder out = null;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x20 || c == 0x7f) {
        if (out == null) {
          out = new StringBuilder(text);
        }
        out.setCharAt(i, '_');
      }
    }
    return out == null ? text : out.toString();
  }
}
