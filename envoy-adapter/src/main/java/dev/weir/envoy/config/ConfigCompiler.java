package dev.weir.envoy.config;

import dev.weir.core.model.Algorithm;
import dev.weir.core.model.Behavior;
import dev.weir.core.model.GregorianInterval;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;
import java.time.DateTimeException;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Checks decoded files and compiles them into one {@link EnvoyConfig}, in the order and with the
 * words of envoyproxy/ratelimit; files are added one at a time and a file that fails leaves the
 * compiler as it was.
 */
final class ConfigCompiler {

  private static final String ALGORITHMS =
      "fixed_window, token_bucket, leaky_bucket, sliding_window";
  private static final String BEHAVIORS = "global, no_batching, drain_over_limit";
  private static final long UINT32_MAX = 0xFFFF_FFFFL;

  /** How much of a rule's name an error shows. */
  private static final int SHOWN_RULE_CHARS = 80;

  private final ConfigLoadOptions options;
  private final Map<String, List<DescriptorNode>> domains = new LinkedHashMap<>();

  /** The file that declared each domain first. */
  private final Map<String, String> domainFiles = new HashMap<>();
  private final long maxCompiledChars;

  /** What each added file is to the user: {@code file}, or {@code resource} over xDS. */
  private final String unit;

  private long compiledChars;

  ConfigCompiler(ConfigLoadOptions options) {
    this(options, "file");
  }

  ConfigCompiler(ConfigLoadOptions options, String unit) {
    this.options = options;
    this.unit = unit;
    this.maxCompiledChars = options.limits().maxCompiledChars();
  }

  /** Checks {@code file} against itself and the files added before it, then adds it. */
  void add(ParsedFile file) throws DescriptorConfigException {
    long before = compiledChars;
    try {
      addChecked(file);
    } catch (DescriptorConfigException e) {
      compiledChars = before;
      throw e;
    }
  }

  private void addChecked(ParsedFile file) throws DescriptorConfigException {
    String domain = file.domain();
    if (domain.isEmpty()) {
      throw error(file, "config file cannot have empty domain");
    }
    List<DescriptorNode> existing = domains.get(domain);
    if (existing != null && !options.mergeDomainConfig()) {
      throw error(
          file,
          "duplicate domain '"
              + domain
              + "' in config file: "
              + domainFiles.get(domain)
              + " declares it too; allowed is one "
              + unit
              + " per domain, or several whose top-level"
              + " descriptors are merged, with "
              + options.mergeVariable()
              + "=true");
    }
    Map<List<String>, String> seen = new HashMap<>();
    if (existing != null) {
      for (DescriptorNode node : existing) {
        seen.put(List.of(node.key(), node.value()), earlier(node));
      }
    }
    List<DescriptorNode> nodes =
        level(file, domain + ".", "", CounterNames.domain(domain), file.descriptors(), seen);
    domains.computeIfAbsent(domain, d -> new ArrayList<>()).addAll(nodes);
    domainFiles.putIfAbsent(domain, file.fileName());
  }

  /**
   * Returns where the top-level {@code node} of an earlier file is: its file and line, or over xDS
   * only its resource, whose lines are those of YAML Weir wrote from it.
   */
  private String earlier(DescriptorNode node) {
    if (!unit.equals("resource")) {
      return "at " + node.source();
    }
    String source = node.source();
    return "in resource " + source.substring(0, source.lastIndexOf(':'));
  }

  /** Returns the compiled configuration of every file added. */
  EnvoyConfig build() {
    Map<String, DomainConfig> out = new LinkedHashMap<>();
    domains.forEach(
        (name, nodes) -> out.put(name, new DomainConfig(name, new DescriptorLevel(nodes))));
    return new EnvoyConfig(out);
  }

  private List<DescriptorNode> level(
      ParsedFile file,
      String compositePrefix,
      String pathPrefix,
      String parentCounterName,
      List<RawDescriptor> raws,
      Map<List<String>, String> seen)
      throws DescriptorConfigException {
    List<DescriptorNode> nodes = new ArrayList<>();
    for (RawDescriptor raw : raws) {
      if (raw.key().isEmpty()) {
        throw error(
            file,
            "descriptor has empty key: the descriptor at line "
                + raw.line()
                + " in '"
                + compositePrefix.substring(0, compositePrefix.length() - 1)
                + "'"
                + (raw.value().isEmpty() ? "" : " (value '" + raw.value() + "')")
                + " has no key; allowed keys are non-empty strings");
      }
      String sourceLine = Integer.toString(raw.line());
      long finalKeyLength =
          raw.key().length() + (raw.value().isEmpty() ? 0L : 1L + raw.value().length());
      long pathLength = pathPrefix.length() + finalKeyLength;
      charge(
          file,
          raw,
          compositePrefix,
          pathLength
              + CounterNames.levelLength(parentCounterName.length(), raw.key(), raw.value())
              + file.fileName().length()
              + 1
              + sourceLine.length());
      String finalKey = raw.value().isEmpty() ? raw.key() : raw.key() + "_" + raw.value();
      String composite = compositePrefix + finalKey;
      String first = seen.putIfAbsent(List.of(raw.key(), raw.value()), "at line " + sourceLine);
      if (first != null) {
        throw error(
            file,
            "duplicate descriptor composite key '"
                + composite
                + "': the descriptor at line "
                + sourceLine
                + " repeats key '"
                + raw.key()
                + (raw.value().isEmpty() ? "' (no value)" : "' with value '" + raw.value() + "'")
                + " of the descriptor "
                + first
                + "; allowed is one descriptor per key and value at each level (several limits"
                + " on one descriptor go in its rate_limits)");
      }
      List<RateLimitRule> limits = limits(file, composite, raw);
      if (raw.shareThreshold() && raw.value().indexOf('*') < 0) {
        throw error(
            file,
            "share_threshold can only be used with wildcard values (containing '*'), but found key"
                + " '"
                + finalKey
                + "': the descriptor '"
                + composite
                + "' at line "
                + sourceLine
                + " has share_threshold: true, but "
                + (raw.value().isEmpty()
                    ? "no value"
                    : "its value '" + raw.value() + "' has no '*'")
                + "; allowed is share_threshold: true on a wildcard value such as '"
                + (raw.value().isEmpty() ? "prefix" : raw.value())
                + "*', or share_threshold: false");
      }
      Map<String, Object> metadata =
          raw.metadata() == null ? Map.of() : metadata(file, raw.metadata());
      String path = pathPrefix + finalKey;
      String counterName = CounterNames.level(parentCounterName, raw.key(), raw.value());
      List<DescriptorNode> children =
          level(file, composite + ".", path + ".", counterName, raw.descriptors(), new HashMap<>());
      if (limits.size() > 1) {
        long names = 0;
        for (int i = 0; i < limits.size(); i++) {
          if (limits.get(i).name().isEmpty()) {
            names += pathLength + 1 + Integer.toString(i).length();
          }
        }
        charge(file, raw, compositePrefix, names);
      }
      List<String> policyNames = new ArrayList<>(limits.size());
      for (int i = 0; i < limits.size(); i++) {
        policyNames.add(DescriptorNode.policyName(limits.get(i), path, i, limits.size()));
      }
      nodes.add(
          new DescriptorNode(
              raw.key(),
              raw.value(),
              path,
              counterName,
              file.fileName() + ":" + sourceLine,
              limits,
              policyNames,
              raw.shadowMode(),
              raw.quotaMode(),
              raw.detailedMetric(),
              raw.valueToMetric(),
              raw.shareThreshold(),
              metadata,
              new DescriptorLevel(children)));
    }
    return nodes;
  }

  /**
   * Counts {@code chars} more characters of compiled text for {@code raw}, refusing the load when
   * they take it over {@link ConfigLimits#maxCompiledChars()}; called before the text is built.
   */
  private void charge(ParsedFile file, RawDescriptor raw, String compositePrefix, long chars)
      throws DescriptorConfigException {
    compiledChars += chars;
    if (compiledChars <= maxCompiledChars) {
      return;
    }
    throw error(
        file,
        "rule "
            + shownRule(compositePrefix, raw)
            + " at line "
            + raw.line()
            + " takes the text of the compiled rules (their paths, counter names and sources) to "
            + compiledChars
            + " characters, over the limit of "
            + maxCompiledChars
            + " characters for one load (twice WEIR_ENVOY_CONFIG_MAX_TOTAL_SIZE); each rule"
            + " repeats the path of the rules it is nested in, so shorten the long keys and values"
            + " that have many rules nested under them");
  }

  /**
   * Returns the composite name of {@code raw} in quotes, cut to its first {@link
   * #SHOWN_RULE_CHARS} characters followed by {@code ...} and its length when longer; the whole
   * name is never built.
   */
  private static String shownRule(String compositePrefix, RawDescriptor raw) {
    List<String> parts =
        raw.value().isEmpty()
            ? List.of(compositePrefix, raw.key())
            : List.of(compositePrefix, raw.key(), "_", raw.value());
    long length = 0;
    StringBuilder shown = new StringBuilder("'");
    for (String part : parts) {
      length += part.length();
      int room = SHOWN_RULE_CHARS + 1 - shown.length();
      shown.append(part, 0, Math.max(0, Math.min(room, part.length())));
    }
    return length <= SHOWN_RULE_CHARS
        ? shown.append('\'').toString()
        : shown.append("...' (").append(length).append(" characters)").toString();
  }

  /** Returns the policies of {@code raw}: its {@code rate_limit}, or its {@code rate_limits}. */
  private List<RateLimitRule> limits(ParsedFile file, String composite, RawDescriptor raw)
      throws DescriptorConfigException {
    if (raw.rateLimits() == null) {
      return raw.rateLimit().isPresent()
          ? List.of(rule(file, composite, raw.rateLimit().get()))
          : List.of();
    }
    if (raw.rateLimit().isPresent()) {
      throw error(
          file,
          "descriptor '"
              + composite
              + "' has both rate_limit and rate_limits: use rate_limit for one policy,"
              + " rate_limits for several");
    }
    if (raw.rateLimits().isEmpty()) {
      throw error(
          file, "rate_limits of '" + composite + "' is empty: list at least one policy");
    }
    List<RateLimitRule> rules = new ArrayList<>();
    for (RawRateLimit policy : raw.rateLimits()) {
      if (policy.unlimited()) {
        throw error(
            file,
            "rate_limits of '"
                + composite
                + "' has an unlimited entry: an unlimited rule uses rate_limit: {unlimited: true}");
      }
      rules.add(rule(file, composite, policy));
    }
    for (int i = 0; i < rules.size(); i++) {
      RateLimitRule rule = rules.get(i);
      for (RateLimitRule other : rules) {
        if (!other.name().isEmpty() && rule.replaces().contains(other.name())) {
          throw error(
              file,
              "replaces should not contain name of same descriptor: "
                  + named(composite, rule.name(), raw.rateLimits().get(i).line())
                  + " replaces '"
                  + other.name()
                  + "', a policy of the same descriptor; allowed are names of rules of other"
                  + " descriptors");
        }
      }
    }
    return rules;
  }

  private RateLimitRule rule(ParsedFile file, String composite, RawRateLimit raw)
      throws DescriptorConfigException {
    Optional<io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit> unit =
        Units.parse(raw.unit());
    String where = "rate_limit of '" + composite + "' at line " + raw.line();
    if (raw.unlimited()) {
      if (unit.isPresent()) {
        throw error(
            file,
            "should not specify rate limit unit when unlimited: unit '"
                + raw.unit()
                + "' in "
                + where
                + "; an unlimited rule has no unit, so remove unit or unlimited");
      }
    } else if (unit.isEmpty()) {
      throw error(
          file,
          "invalid rate limit unit '"
              + raw.unit()
              + "': "
              + (raw.unit().isEmpty()
                  ? where + " has no unit; allowed units are " + Units.NAMES
                      + " (in any case), or none with unlimited: true"
                  : "in " + where + "; allowed units are " + Units.NAMES + " (in any case)"));
    }
    String named = named(composite, raw.name(), raw.line());
    for (String replaced : raw.replaces()) {
      if (replaced.isEmpty()) {
        throw error(
            file,
            "should not have an empty replaces entry: replaces of "
                + named
                + " has an entry without a name; allowed are names of other rules");
      }
      if (replaced.equals(raw.name())) {
        throw error(
            file,
            "replaces should not contain name of same descriptor: "
                + named
                + " replaces its own name '"
                + replaced
                + "'; allowed are names of other rules");
      }
    }
    Algorithm algorithm = algorithm(file, composite, raw.algorithm());
    long burst = burst(file, composite, raw.burst());
    int behavior = behavior(file, composite, raw.behavior());
    long multiplier = unitMultiplier(file, composite, raw.unitMultiplier(), unit);
    Optional<CalendarWindow> calendar = calendar(file, composite, raw, unit, multiplier);
    return new RateLimitRule(
        raw.requestsPerUnit(),
        unit.orElse(
            io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit.UNKNOWN),
        raw.unlimited(),
        raw.name(),
        raw.replaces(),
        algorithm,
        burst,
        behavior,
        multiplier,
        calendar);
  }

  /** Returns how an error names the policy called {@code name} of {@code composite}. */
  private static String named(String composite, String name, int line) {
    return "rate_limit "
        + (name.isEmpty() ? "" : "'" + name + "' ")
        + "of '"
        + composite
        + "' at line "
        + line;
  }

  /**
   * Returns the calendar alignment of a rule: empty unless {@code calendar: true}, which needs a
   * unit of an hour or longer, no {@code unit_multiplier} above 1, and takes an optional {@code
   * time_zone} (UTC by default); {@code time_zone} without it is an error.
   */
  private Optional<CalendarWindow> calendar(
      ParsedFile file,
      String composite,
      RawRateLimit raw,
      Optional<io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit> unit,
      long multiplier)
      throws DescriptorConfigException {
    Node node = raw.calendar();
    boolean on = false;
    if (node != null && !isNull(node)) {
      if (node instanceof ScalarNode s && s.getTag().equals(Tag.BOOL)) {
        on = YamlV2Resolver.isTrue(s.getValue());
      } else {
        throw error(
            file,
            "invalid calendar '"
                + YamlConfigParser.render(node)
                + "' in rate_limit of '"
                + composite
                + "': allowed values are true, false"
                + quoted(node));
      }
    }
    Node zoneNode = raw.timeZone();
    boolean hasZone = zoneNode != null && !isNull(zoneNode);
    if (!on) {
      if (hasZone) {
        throw error(
            file,
            "time_zone '"
                + YamlConfigParser.render(zoneNode)
                + "' in rate_limit of '"
                + composite
                + "' needs calendar: true (windows of fixed length have no time zone)");
      }
      return Optional.empty();
    }
    GregorianInterval interval = unit.map(ConfigCompiler::calendarInterval).orElse(null);
    if (interval == null) {
      throw error(
          file,
          "invalid unit '"
              + unit.map(u -> u.name().toLowerCase(Locale.ROOT)).orElse(raw.unit())
              + "' with calendar: true in rate_limit of '"
              + composite
              + "': allowed units are hour, day, week, month, year");
    }
    if (multiplier != 1) {
      throw error(
          file,
          "invalid unit_multiplier '"
              + multiplier
              + "' with calendar: true in rate_limit of '"
              + composite
              + "': a calendar window is one unit, so the only allowed value is 1");
    }
    ZoneId zone = ZoneOffset.UTC;
    if (hasZone) {
      String text = zoneNode instanceof ScalarNode zs ? zs.getValue() : "";
      try {
        zone = ZoneId.of(text);
      } catch (DateTimeException e) {
        throw error(
            file,
            "invalid time_zone '"
                + YamlConfigParser.render(zoneNode)
                + "' in rate_limit of '"
                + composite
                + "': allowed values are zone ids such as UTC or Europe/Berlin, and offsets such"
                + " as +02:00");
      }
    }
    return Optional.of(new CalendarWindow(interval, zone));
  }

  /** Returns the calendar interval of {@code unit}, or null when it has none (second, minute). */
  private static GregorianInterval calendarInterval(
      io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit unit) {
    return switch (unit) {
      case HOUR -> GregorianInterval.HOURS;
      case DAY -> GregorianInterval.DAYS;
      case WEEK -> GregorianInterval.WEEKS;
      case MONTH -> GregorianInterval.MONTHS;
      case YEAR -> GregorianInterval.YEARS;
      default -> null;
    };
  }

  /**
   * Returns the {@code unit_multiplier} of a rule: a whole number from 1 (the default) up to the
   * largest that keeps the window, in milliseconds, within a signed 64-bit number.
   */
  private long unitMultiplier(
      ParsedFile file,
      String composite,
      Node node,
      Optional<io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit> unit)
      throws DescriptorConfigException {
    if (node == null || isNull(node)) {
      return 1;
    }
    long unitMillis = unit.map(Units::millis).orElse(1L);
    long max = Math.min(UINT32_MAX, Long.MAX_VALUE / Math.max(1, unitMillis));
    if (node instanceof ScalarNode s && s.getTag().equals(Tag.INT)) {
      BigInteger v = YamlConfigParser.parseYamlInt(s.getValue());
      if (v != null && v.signum() > 0 && v.compareTo(BigInteger.valueOf(max)) <= 0) {
        return v.longValue();
      }
    }
    throw error(
        file,
        "invalid unit_multiplier '"
            + YamlConfigParser.render(node)
            + "' in rate_limit of '"
            + composite
            + "': allowed values are whole numbers from 1 to "
            + max
            + quoted(node));
  }

  // Why a number or boolean is not one: it is written in quotes, a string.
  private static String quoted(Node node) {
    return node instanceof ScalarNode s
            && s.getTag().equals(Tag.STR)
            && s.getScalarStyle() != DumperOptions.ScalarStyle.PLAIN
            && s.getValue().matches("[0-9]+|true|false")
        ? " (written in quotes, it is a string: write numbers and booleans without quotes)"
        : "";
  }

  private Algorithm algorithm(ParsedFile file, String composite, Node node)
      throws DescriptorConfigException {
    if (node == null || isNull(node)) {
      return options.defaultAlgorithm();
    }
    if (node instanceof ScalarNode s) {
      Optional<Algorithm> parsed = parseAlgorithm(s.getValue());
      if (parsed.isPresent()) {
        return parsed.get();
      }
    }
    throw error(
        file,
        "invalid algorithm '"
            + YamlConfigParser.render(node)
            + "' in rate_limit of '"
            + composite
            + "': allowed values are "
            + ALGORITHMS);
  }

  /** Returns the algorithm named {@code text} (case-insensitive, e.g. {@code token_bucket}). */
  static Optional<Algorithm> parseAlgorithm(String text) {
    String upper = text.toUpperCase(Locale.ROOT);
    for (Algorithm a : Algorithm.values()) {
      if (a.name().equals(upper)) {
        return Optional.of(a);
      }
    }
    return Optional.empty();
  }

  private long burst(ParsedFile file, String composite, Node node)
      throws DescriptorConfigException {
    if (node == null || isNull(node)) {
      return 0;
    }
    if (node instanceof ScalarNode s && s.getTag().equals(Tag.INT)) {
      BigInteger v = YamlConfigParser.parseYamlInt(s.getValue());
      if (v != null && v.signum() >= 0 && v.compareTo(BigInteger.valueOf(UINT32_MAX)) <= 0) {
        return v.longValue();
      }
    }
    throw error(
        file,
        "invalid burst '"
            + YamlConfigParser.render(node)
            + "' in rate_limit of '"
            + composite
            + "': allowed values are integers from 0 to "
            + UINT32_MAX
            + quoted(node));
  }

  private int behavior(ParsedFile file, String composite, Node node)
      throws DescriptorConfigException {
    if (node == null || isNull(node)) {
      return Behavior.BATCHING;
    }
    if (!(node instanceof SequenceNode seq)) {
      throw error(
          file,
          "invalid behavior '"
              + YamlConfigParser.render(node)
              + "' in rate_limit of '"
              + composite
              + "' at line "
              + (node.getStartMark().getLine() + 1)
              + ": must be a list of "
              + BEHAVIORS
              + "; write it as ["
              + (node instanceof ScalarNode s ? s.getValue() : "global")
              + "]");
    }
    int flags = Behavior.BATCHING;
    for (Node item : seq.getValue()) {
      String text = item instanceof ScalarNode s ? s.getValue().toLowerCase(Locale.ROOT) : "";
      int flag =
          switch (text) {
            case "global" -> Behavior.GLOBAL;
            case "no_batching" -> Behavior.NO_BATCHING;
            case "drain_over_limit" -> Behavior.DRAIN_OVER_LIMIT;
            default -> -1;
          };
      if (flag < 0) {
        throw error(
            file,
            "invalid behavior '"
                + YamlConfigParser.render(item)
                + "' in rate_limit of '"
                + composite
                + "': allowed values are "
                + BEHAVIORS);
      }
      flags |= flag;
    }
    return flags;
  }

  private Map<String, Object> metadata(ParsedFile file, Node node)
      throws DescriptorConfigException {
    if (isNull(node)) {
      return Map.of();
    }
    if (!(node instanceof MappingNode)) {
      throw error(
          file,
          "error parsing metadata: metadata must be a map, found " + YamlConfigParser.render(node));
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> map = (Map<String, Object>) plain(file, node, true);
    return map;
  }

  /**
   * Returns {@code node} as plain Java values; map keys become text as envoyproxy/ratelimit's
   * yaml.v2 decode makes them: those of {@code metadata} itself ({@code textKeys}) as written, the
   * nested ones as Go's {@code %v} prints the decoded value (see {@link #goKey}).
   */
  private Object plain(ParsedFile file, Node node, boolean textKeys)
      throws DescriptorConfigException {
    if (node instanceof MappingNode m) {
      Map<String, Object> out = new LinkedHashMap<>();
      for (NodeTuple t : m.getValue()) {
        Node k = t.getKeyNode();
        if (!(k instanceof ScalarNode ks)) {
          throw error(
              file,
              "error parsing metadata: key is not of type string: "
                  + YamlConfigParser.render(k)
                  + " at line "
                  + (k.getStartMark().getLine() + 1)
                  + ": allowed keys are strings, numbers, booleans and null");
        }
        String key =
            textKeys ? (ks.getTag().equals(Tag.NULL) ? "" : ks.getValue()) : goKey(ks);
        out.put(key, plain(file, t.getValueNode(), false));
      }
      return Collections.unmodifiableMap(out);
    }
    if (node instanceof SequenceNode seq) {
      List<Object> out = new ArrayList<>();
      for (Node item : seq.getValue()) {
        out.add(plain(file, item, false));
      }
      return Collections.unmodifiableList(out);
    }
    ScalarNode s = (ScalarNode) node;
    Tag tag = s.getTag();
    if (tag.equals(Tag.NULL)) {
      return null;
    }
    if (tag.equals(Tag.BOOL)) {
      return YamlV2Resolver.isTrue(s.getValue());
    }
    if (tag.equals(Tag.FLOAT) && goSpecialFloat(s.getValue()) != null) {
      throw error(
          file,
          "error parsing metadata: invalid number "
              + YamlConfigParser.render(s)
              + " at line "
              + (s.getStartMark().getLine() + 1)
              + ": allowed are finite numbers (a JSON answer cannot carry .inf or .nan)");
    }
    Number n = yamlV2Number(s);
    return n == null ? s.getValue() : n.doubleValue();
  }

  /**
   * Returns the number yaml.v2 decodes the scalar {@code node} to, or null when it keeps the text:
   * an integer within int64 or uint64 as a {@link BigInteger}; a longer integer of decimal digits
   * or a float within a float64's range as a {@link Double} (yaml.v2's float pattern takes neither
   * a {@code 0x}, {@code 0o} or {@code 0b} prefix nor base 60, and Go's {@code ParseFloat} refuses
   * {@code 1e400}); null for anything else, including {@code .inf} and {@code .nan}.
   */
  private static Number yamlV2Number(ScalarNode node) {
    Tag tag = node.getTag();
    String text = node.getValue();
    String digits = text.replace("_", "");
    if (tag.equals(Tag.INT)) {
      BigInteger v = YamlConfigParser.parseYamlInt(text);
      if (v == null) {
        return null;
      }
      if (v.bitLength() <= 63 || (v.signum() > 0 && v.bitLength() <= 64)) {
        return v;
      }
      return digits.matches("[-+]?[0-9]+") ? finiteOrNull(digits) : null;
    }
    if (tag.equals(Tag.FLOAT) && goSpecialFloat(text) == null) {
      return finiteOrNull(digits);
    }
    return null;
  }

  /** Returns the finite float64 {@code text} reads as, or null when it is none. */
  private static Double finiteOrNull(String text) {
    try {
      double d = Double.parseDouble(text);
      return Double.isInfinite(d) || Double.isNaN(d) ? null : d;
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /**
   * Returns how Go's {@code %v} prints the infinity or NaN that yaml.v2 reads {@code text} as
   * ({@code +Inf}, {@code -Inf}, {@code NaN}), or null when {@code text} is no {@code .inf} or
   * {@code .nan} spelling.
   */
  private static String goSpecialFloat(String text) {
    return switch (text.replace("_", "").toLowerCase(Locale.ROOT)) {
      case ".inf", "+.inf" -> "+Inf";
      case "-.inf" -> "-Inf";
      case ".nan" -> "NaN";
      default -> null;
    };
  }

  /**
   * Returns the text of a nested metadata key as envoyproxy/ratelimit makes it: yaml.v2 decodes the
   * key to a Go value (a number, boolean, nil or string; a timestamp stays text) and {@code
   * convertMap} prints it with {@code %v}, so {@code 0x1F} is {@code 31}, {@code 1.50} is {@code
   * 1.5}, {@code 1e6} is {@code 1e+06} and {@code ~} is {@code <nil>}.
   */
  static String goKey(ScalarNode key) {
    Tag tag = key.getTag();
    String text = key.getValue();
    if (tag.equals(Tag.NULL)) {
      return "<nil>";
    }
    if (tag.equals(Tag.BOOL)) {
      return Boolean.toString(YamlV2Resolver.isTrue(text));
    }
    String special = tag.equals(Tag.FLOAT) ? goSpecialFloat(text) : null;
    if (special != null) {
      return special;
    }
    Number n = yamlV2Number(key);
    if (n instanceof BigInteger v) {
      return v.toString();
    }
    return n == null ? text : goFloat(n.doubleValue());
  }

  /**
   * Returns {@code d} as Go's {@code %v} prints a float64: the fewest digits that read back as
   * {@code d}, in exponent form ({@code 1e+06}, {@code 1e-05}) when the exponent is below -4 or
   * from 6 up.
   */
  static String goFloat(double d) {
    if (Double.isNaN(d)) {
      return "NaN";
    }
    if (Double.isInfinite(d)) {
      return d > 0 ? "+Inf" : "-Inf";
    }
    if (d == 0) {
      return 1 / d < 0 ? "-0" : "0";
    }
    BigDecimal exact = new BigDecimal(d);
    BigDecimal shortest = exact;
    for (int digits = 1; digits <= 17; digits++) {
      BigDecimal rounded = exact.round(new MathContext(digits, RoundingMode.HALF_EVEN));
      if (rounded.doubleValue() == d) {
        shortest = rounded;
        break;
      }
    }
    shortest = shortest.stripTrailingZeros();
    String digits = shortest.unscaledValue().abs().toString();
    int exponent = digits.length() - 1 - shortest.scale();
    String sign = d < 0 ? "-" : "";
    if (exponent >= -4 && exponent < 6) {
      return sign + shortest.abs().toPlainString();
    }
    int e = Math.abs(exponent);
    return sign
        + digits.charAt(0)
        + (digits.length() > 1 ? "." + digits.substring(1) : "")
        + "e"
        + (exponent < 0 ? "-" : "+")
        + (e < 10 ? "0" : "")
        + e;
  }

  private static boolean isNull(Node node) {
    return node instanceof ScalarNode s && s.getTag().equals(Tag.NULL);
  }

  private static DescriptorConfigException error(ParsedFile file, String text) {
    return new DescriptorConfigException(file.fileName() + ": " + text);
  }
}
