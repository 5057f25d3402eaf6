package dev.weir.envoy.config;

import java.io.StringReader;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;
import org.yaml.snakeyaml.representer.Representer;

/**
 * Decodes one descriptor YAML file the way envoyproxy/ratelimit does: YAML syntax first, then the
 * maps resolved as its YAML library resolves them (merge keys applied, a repeated key's last value
 * used, see {@link YamlMaps}), then a key check of the whole tree against one flat set of allowed
 * keys, then a typed decode in which keys at an unexpected level are ignored. Weir's extension keys
 * are the exception: {@link #WEIR_KEYS} are allowed only directly inside a {@code rate_limit} map
 * (or a {@code rate_limits} entry), and {@code rate_limits} only in a descriptor; anywhere else
 * they are unknown keys.
 *
 * <p>Errors carry envoyproxy/ratelimit's wording, prefixed with the file name and, where that does
 * not say what is wrong, followed by where it is, its line and what is allowed there.
 */
final class YamlConfigParser {

  /** Keys envoyproxy/ratelimit accepts anywhere in a file. */
  static final Set<String> REFERENCE_KEYS =
      Set.of(
          "domain",
          "key",
          "value",
          "descriptors",
          "rate_limit",
          "unit",
          "requests_per_unit",
          "unlimited",
          "shadow_mode",
          "quota_mode",
          "name",
          "replaces",
          "detailed_metric",
          "value_to_metric",
          "share_threshold",
          "metadata");

  /** Weir's extension keys, valid only directly inside a {@code rate_limit} map. */
  static final Set<String> WEIR_KEYS =
      Set.of("algorithm", "burst", "behavior", "unit_multiplier", "calendar", "time_zone");

  /** Weir's extension key of a descriptor: several policies, every one of which must pass. */
  static final String RATE_LIMITS = "rate_limits";

  /**
   * Where a map sits in a file, which decides the Weir keys it may hold and the keys an unknown
   * key's error lists as allowed: those that mean something there.
   */
  private enum Place {
    /** The top-level map. */
    TOP("domain, descriptors"),
    /** A descriptor: {@code rate_limits} is allowed. */
    DESCRIPTOR(
        "key, value, rate_limit, rate_limits, descriptors, shadow_mode, quota_mode,"
            + " detailed_metric, value_to_metric, share_threshold, metadata"),
    /** A {@code rate_limit} map or a {@code rate_limits} entry: {@link #WEIR_KEYS} are allowed. */
    RATE_LIMIT(
        "unit, requests_per_unit, unlimited, name, replaces, algorithm, burst, behavior,"
            + " unit_multiplier, calendar, time_zone"),
    /** An entry of the {@code replaces} of a rate limit. */
    REPLACES("name"),
    /** Anywhere else: no key means anything, and envoyproxy/ratelimit's own are allowed. */
    OTHER(
        "domain, key, value, descriptors, rate_limit, unit, requests_per_unit, unlimited,"
            + " shadow_mode, quota_mode, name, replaces, detailed_metric, value_to_metric,"
            + " share_threshold, metadata");

    private final String allowedKeys;

    Place(String allowedKeys) {
      this.allowedKeys = allowedKeys;
    }
  }

  private static final long UINT32_MAX = 0xFFFF_FFFFL;

  private final String fileName;
  private final ConfigLimits limits;

  private YamlConfigParser(String fileName, ConfigLimits limits) {
    this.fileName = fileName;
    this.limits = limits;
  }

  /**
   * Decodes {@code text}, the content of the file called {@code fileName}, within {@code limits}
   * and {@link ConfigLimits}' fixed limits on alias expansion and nesting.
   */
  static ParsedFile parse(String fileName, String text, ConfigLimits limits)
      throws DescriptorConfigException {
    return new YamlConfigParser(fileName, limits).parse(text);
  }

  // Whether another document follows; what it holds, malformed or not, is not read.
  private static boolean moreDocuments(Iterator<Node> documents) {
    try {
      return documents.hasNext();
    } catch (RuntimeException malformed) {
      return true;
    }
  }

  private ParsedFile parse(String text) throws DescriptorConfigException {
    Node root;
    boolean moreDocuments;
    try {
      // The first document, as yaml.v2's Unmarshal reads it; a later one (a trailing "---"
      // included) is not read.
      Iterator<Node> documents = yaml().composeAll(new StringReader(text)).iterator();
      root = documents.hasNext() ? documents.next() : null;
      moreDocuments = root != null && moreDocuments(documents);
    } catch (YAMLException e) {
      throw error(
          "error loading config file: " + oneLine(e.getMessage()) + nestingWhere(e, text));
    } catch (RuntimeException e) {
      // SnakeYAML refuses some malformed input outside YAMLException (a tag whose %-escape decodes
      // to a space throws IllegalArgumentException); any of it is this file's load error.
      throw error("error loading config file: " + oneLine(String.valueOf(e.getMessage())));
    }
    if (root == null) {
      return new ParsedFile(fileName, "", List.of(), List.of());
    }
    Optional<String> aliasProblem =
        AliasCheck.problem(
            root, ConfigLimits.MAX_ALIAS_EXPANSION_NODES, ConfigLimits.MAX_NESTING_DEPTH);
    if (aliasProblem.isPresent()) {
      throw error("error loading config file: " + aliasProblem.get());
    }
    YamlMaps.Result maps;
    try {
      maps = YamlMaps.resolve(root);
    } catch (YamlMaps.MergeError e) {
      throw error("error loading config file: " + e.getMessage());
    }
    List<String> warnings = new ArrayList<>();
    for (String warning : maps.warnings()) {
      warnings.add(fileName + ": " + warning);
    }
    if (moreDocuments) {
      warnings.add(
          fileName
              + ": the file holds more than one YAML document (a line '---' after the first);"
              + " only the first is read");
    }
    if (!(maps.root() instanceof MappingNode map)) {
      throw unmarshal(maps.root(), "map");
    }
    String domainAhead = scalarAhead(map, "domain");
    validateKeys(map, Place.TOP, "the top-level map", "", domainAhead + ".");
    String domain = "";
    List<RawDescriptor> descriptors = List.of();
    for (NodeTuple t : map.getValue()) {
      switch (keyOf(t)) {
        case "domain" -> domain = string(t.getValueNode());
        case "descriptors" -> descriptors = descriptors(t.getValueNode(), domainAhead + ".");
        default -> {}
      }
    }
    return new ParsedFile(fileName, domain, descriptors, warnings);
  }

  /**
   * Returns, for the composer's refusal of {@code text} as nested too deep (whose message says
   * neither where nor what fits), where it nests too deep and what is allowed; else "".
   */
  private String nestingWhere(YAMLException e, String text) {
    if (e.getMessage() == null || !e.getMessage().startsWith("Nesting Depth exceeded")) {
      return "";
    }
    int max = ConfigLimits.MAX_NESTING_DEPTH;
    return NestingDepth.firstTooDeep(yaml(), text, max)
        .map(
            where ->
                ": "
                    + where
                    + "; allowed are "
                    + max
                    + " levels of maps and lists per file, "
                    + (max - 2) / 2
                    + " levels of descriptors")
        .orElse("");
  }

  /** A reader whose scalars resolve to the types yaml.v2 gives them. */
  private Yaml yaml() {
    LoaderOptions loaderOptions = loaderOptions();
    DumperOptions dumperOptions = new DumperOptions();
    return new Yaml(
        new SafeConstructor(loaderOptions),
        new Representer(dumperOptions),
        dumperOptions,
        loaderOptions,
        new YamlV2Resolver());
  }

  private LoaderOptions loaderOptions() {
    LoaderOptions options = new LoaderOptions();
    // AliasCheck bounds what aliases expand to, whatever their number.
    options.setMaxAliasesForCollections(Integer.MAX_VALUE);
    options.setAllowRecursiveKeys(false);
    options.setNestingDepthLimit(ConfigLimits.MAX_NESTING_DEPTH);
    options.setCodePointLimit(limits.maxFileBytes());
    return options;
  }

  /**
   * Checks every key of {@code map}, which sits at {@code place}, and of the maps below it. {@code
   * where} names the map in errors ({@code rate_limit of 'd.k'}); {@code owner} is the composite
   * name of the descriptor the map belongs to (empty at the top), and {@code prefix} is that of the
   * descriptors it lists. An error is the reference's text followed by where the key or item is,
   * its line and what is allowed there.
   */
  private void validateKeys(
      MappingNode map, Place place, String where, String owner, String prefix)
      throws DescriptorConfigException {
    for (NodeTuple t : map.getValue()) {
      Node keyNode = t.getKeyNode();
      if (!isTextKey(keyNode)) {
        throw error(
            "config error, key is not of type string: "
                + (keyNode instanceof ScalarNode scalarKey
                    ? ConfigCompiler.goKey(scalarKey)
                    : render(keyNode))
                + ": in "
                + where
                + " at line "
                + line(keyNode)
                + ", YAML reads the key '"
                + (keyNode instanceof ScalarNode scalarKey ? scalarKey.getValue() : render(keyNode))
                + "' as "
                + kind(keyNode)
                + "; allowed keys are "
                + place.allowedKeys);
      }
      String key = ((ScalarNode) keyNode).getValue();
      boolean allowed =
          REFERENCE_KEYS.contains(key)
              || (place == Place.RATE_LIMIT && WEIR_KEYS.contains(key))
              || (place == Place.DESCRIPTOR && key.equals(RATE_LIMITS));
      if (!allowed) {
        throw error(
            "config error, unknown key '"
                + key
                + "': in "
                + where
                + " at line "
                + line(keyNode)
                + belongs(key)
                + "; allowed keys are "
                + place.allowedKeys);
      }
      if (key.equals("metadata") || key.equals("behavior")) {
        continue;
      }
      Node value = t.getValueNode();
      if (value instanceof SequenceNode seq) {
        List<Node> items = seq.getValue();
        for (int i = 0; i < items.size(); i++) {
          Node item = items.get(i);
          if (!(item instanceof MappingNode itemMap)) {
            throw error(
                "config error, yaml file contains list of type other than map: "
                    + render(item)
                    + ": item "
                    + (i + 1)
                    + " of "
                    + key
                    + " in "
                    + where
                    + " at line "
                    + line(item)
                    + "; allowed items are "
                    + allowedItems(key, place));
          }
          if (key.equals("descriptors")) {
            String composite = prefix + finalKeyAhead(itemMap);
            validateKeys(
                itemMap,
                Place.DESCRIPTOR,
                "descriptor '" + composite + "'",
                composite,
                composite + ".");
          } else if (key.equals(RATE_LIMITS)) {
            validateKeys(
                itemMap, Place.RATE_LIMIT, RATE_LIMITS + " of '" + owner + "'", owner, prefix);
          } else if (key.equals("replaces") && place == Place.RATE_LIMIT) {
            validateKeys(itemMap, Place.REPLACES, "replaces of " + where, owner, prefix);
          } else {
            validateKeys(itemMap, Place.OTHER, "a map in " + key + " of " + where, owner, prefix);
          }
        }
      } else if (value instanceof MappingNode nested) {
        if (key.equals("rate_limit")) {
          validateKeys(
              nested,
              Place.RATE_LIMIT,
              place == Place.DESCRIPTOR ? "rate_limit of '" + owner + "'" : "rate_limit of " + where,
              owner,
              prefix);
        } else {
          validateKeys(nested, Place.OTHER, "the map under " + key + " of " + where, owner, prefix);
        }
      } else if (value instanceof ScalarNode scalar && !isLeaf(scalar.getTag())) {
        // The reference's text, then which key, value and place it is and what the key allows.
        throw error("error checking config: " + notALeaf(key, scalar, place, owner));
      }
    }
  }

  /**
   * Whether yaml.v2 decodes {@code key} to a Go string: text, or text that looks like a timestamp
   * (which yaml.v2 v2.4.0 keeps as text in a map of any values).
   */
  private static boolean isTextKey(Node key) {
    return key instanceof ScalarNode s
        && (s.getTag().equals(Tag.STR) || s.getTag().equals(Tag.TIMESTAMP));
  }

  /** What YAML reads {@code node}, a key that is not text, as: "a boolean", "a list", ... */
  private static String kind(Node node) {
    if (node instanceof SequenceNode) {
      return "a list";
    }
    if (node instanceof MappingNode) {
      return "a map";
    }
    Tag tag = node.getTag();
    if (tag.equals(Tag.BOOL)) {
      return "a boolean";
    }
    if (tag.equals(Tag.INT)) {
      return "a whole number";
    }
    if (tag.equals(Tag.FLOAT)) {
      return "a number with a fraction";
    }
    if (tag.equals(Tag.NULL)) {
      return "null";
    }
    return "a value tagged " + shortTag(tag);
  }

  /** Where {@code key}, a Weir key in a map that may not hold it, belongs; else "". */
  private static String belongs(String key) {
    if (WEIR_KEYS.contains(key)) {
      return "; " + key + " belongs in a rate_limit map or a rate_limits entry";
    }
    if (key.equals(RATE_LIMITS)) {
      return "; " + RATE_LIMITS + " belongs in a descriptor";
    }
    return "";
  }

  /** The items a list under {@code key}, in a map at {@code place}, may hold. */
  private static String allowedItems(String key, Place place) {
    if (key.equals("descriptors")) {
      return "descriptors, maps such as {key: k, value: v}";
    }
    if (key.equals(RATE_LIMITS)) {
      return "maps such as {unit: minute, requests_per_unit: 10}";
    }
    if (key.equals("replaces") && place == Place.RATE_LIMIT) {
      return "maps such as {name: <rule name>}";
    }
    return "maps";
  }

  /** Keys whose values are whole numbers from 0 to 4294967295. */
  private static final Set<String> UINT32_KEYS = Set.of("requests_per_unit", "burst");

  /** Keys whose values are booleans. */
  private static final Set<String> BOOL_KEYS =
      Set.of(
          "unlimited",
          "shadow_mode",
          "quota_mode",
          "detailed_metric",
          "value_to_metric",
          "share_threshold",
          "calendar");

  /** Why {@code scalar}, the value of {@code key} at {@code place} of {@code owner}, is refused. */
  private static String notALeaf(String key, ScalarNode scalar, Place place, String owner) {
    String value = scalar.getValue();
    String where =
        owner.isEmpty()
            ? ""
            : switch (place) {
              case RATE_LIMIT -> " in rate_limit of '" + owner + "'";
              case DESCRIPTOR -> " in descriptor '" + owner + "'";
              case TOP, REPLACES, OTHER -> " in '" + owner + "'";
            };
    String allowed;
    if (UINT32_KEYS.contains(key)) {
      allowed = "allowed values are whole numbers from 0 to " + UINT32_MAX;
    } else if (key.equals("unit_multiplier")) {
      allowed = "allowed values are whole numbers from 1";
    } else if (BOOL_KEYS.contains(key)) {
      allowed = "allowed values are true, false";
    } else {
      allowed =
          "YAML reads it as "
              + (scalar.getTag().equals(Tag.FLOAT)
                  ? "a number with a fraction"
                  : shortTag(scalar.getTag()))
              + ", not text: write it in quotes ('"
              + value
              + "')";
    }
    return "invalid " + key + " '" + value + "'" + where + ": " + allowed;
  }

  /** The value of the scalar {@code name} of {@code map}, read ahead of its other keys; else "". */
  private static String scalarAhead(MappingNode map, String name) {
    String found = "";
    for (NodeTuple t : map.getValue()) {
      if (t.getKeyNode() instanceof ScalarNode k
          && k.getValue().equals(name)
          && t.getValueNode() instanceof ScalarNode v
          && !v.getTag().equals(Tag.NULL)) {
        found = v.getValue();
      }
    }
    return found;
  }

  /** A descriptor's last part of its composite name, {@code key} or {@code key_value}. */
  private static String finalKeyAhead(MappingNode descriptor) {
    String key = scalarAhead(descriptor, "key");
    String value = scalarAhead(descriptor, "value");
    return value.isEmpty() ? key : key + "_" + value;
  }

  private static boolean isLeaf(Tag tag) {
    return tag.equals(Tag.STR)
        || tag.equals(Tag.INT)
        || tag.equals(Tag.BOOL)
        || tag.equals(Tag.NULL)
        || tag.equals(Tag.TIMESTAMP);
  }

  /** Decodes a list of descriptors whose composite names start with {@code prefix}. */
  private List<RawDescriptor> descriptors(Node node, String prefix)
      throws DescriptorConfigException {
    List<RawDescriptor> out = new ArrayList<>();
    for (MappingNode item : mappings(node, "[]config.YamlDescriptor")) {
      out.add(descriptor(item, prefix));
    }
    return out;
  }

  private RawDescriptor descriptor(MappingNode map, String prefix)
      throws DescriptorConfigException {
    String composite = prefix + finalKeyAhead(map);
    String key = "";
    String value = "";
    Optional<RawRateLimit> rateLimit = Optional.empty();
    List<RawRateLimit> rateLimits = null;
    List<RawDescriptor> children = List.of();
    boolean shadow = false;
    boolean quota = false;
    boolean detailed = false;
    boolean valueToMetric = false;
    boolean share = false;
    Node metadata = null;
    for (NodeTuple t : map.getValue()) {
      Node v = t.getValueNode();
      switch (keyOf(t)) {
        case "key" -> key = string(v);
        case "value" -> value = string(v);
        case "rate_limit" -> rateLimit = rateLimit(v, composite, line(t.getKeyNode()));
        case RATE_LIMITS -> rateLimits = rateLimits(v, composite);
        case "descriptors" -> children = descriptors(v, composite + ".");
        case "shadow_mode" -> shadow = bool(v, "shadow_mode", " in descriptor '" + composite + "'");
        case "quota_mode" -> quota = bool(v, "quota_mode", " in descriptor '" + composite + "'");
        case "detailed_metric" -> detailed = bool(v, "detailed_metric", " in descriptor '" + composite + "'");
        case "value_to_metric" -> valueToMetric = bool(v, "value_to_metric", " in descriptor '" + composite + "'");
        case "share_threshold" -> share = bool(v, "share_threshold", " in descriptor '" + composite + "'");
        case "metadata" -> metadata = v;
        default -> {}
      }
    }
    return new RawDescriptor(
        key,
        value,
        rateLimit,
        rateLimits,
        line(map),
        children,
        shadow,
        quota,
        detailed,
        valueToMetric,
        share,
        metadata);
  }

  private List<RawRateLimit> rateLimits(Node node, String composite)
      throws DescriptorConfigException {
    List<RawRateLimit> out = new ArrayList<>();
    for (MappingNode item : mappings(node, "[]config.YamlRateLimit")) {
      out.add(rateLimit(item, composite, line(item)).orElseThrow());
    }
    return out;
  }

  /** Decodes the rate limit, starting on {@code line}, of the descriptor named {@code composite}. */
  private Optional<RawRateLimit> rateLimit(Node node, String composite, int line)
      throws DescriptorConfigException {
    if (isNull(node)) {
      return Optional.empty();
    }
    if (!(node instanceof MappingNode map)) {
      throw unmarshal(node, "config.YamlRateLimit");
    }
    long rpu = 0;
    String unit = "";
    boolean unlimited = false;
    String name = "";
    List<String> replaces = new ArrayList<>();
    Node algorithm = null;
    Node burst = null;
    Node behavior = null;
    Node unitMultiplier = null;
    Node calendar = null;
    Node timeZone = null;
    for (NodeTuple t : map.getValue()) {
      Node v = t.getValueNode();
      switch (keyOf(t)) {
        case "requests_per_unit" -> rpu = requestsPerUnit(v, composite);
        case "unit" -> unit = string(v);
        case "unlimited" ->
            unlimited = bool(v, "unlimited", " in rate_limit of '" + composite + "'");
        case "name" -> name = string(v);
        case "replaces" -> {
          for (MappingNode r : mappings(v, "[]config.yamlReplaces")) {
            String replaced = "";
            for (NodeTuple rt : r.getValue()) {
              if (keyOf(rt).equals("name")) {
                replaced = string(rt.getValueNode());
              }
            }
            replaces.add(replaced);
          }
        }
        case "algorithm" -> algorithm = v;
        case "burst" -> burst = v;
        case "behavior" -> behavior = v;
        case "unit_multiplier" -> unitMultiplier = v;
        case "calendar" -> calendar = v;
        case "time_zone" -> timeZone = v;
        default -> {}
      }
    }
    return Optional.of(
        new RawRateLimit(
            rpu,
            unit,
            unlimited,
            name,
            replaces,
            algorithm,
            burst,
            behavior,
            unitMultiplier,
            calendar,
            timeZone,
            line));
  }

  private List<MappingNode> mappings(Node node, String target) throws DescriptorConfigException {
    if (isNull(node)) {
      return List.of();
    }
    if (!(node instanceof SequenceNode seq)) {
      throw unmarshal(node, target);
    }
    List<MappingNode> out = new ArrayList<>();
    for (Node item : seq.getValue()) {
      if (!(item instanceof MappingNode m)) {
        throw unmarshal(item, target.substring(2));
      }
      out.add(m);
    }
    return out;
  }

  private String string(Node node) throws DescriptorConfigException {
    if (isNull(node)) {
      return "";
    }
    if (node instanceof ScalarNode s) {
      return s.getValue();
    }
    throw unmarshal(node, "string");
  }

  /**
   * Decodes the boolean {@code key}, found {@code where} (" in descriptor '...'"); a bad value's
   * error is the reference's, followed by the key, the value, where it is and the allowed values.
   */
  private boolean bool(Node node, String key, String where) throws DescriptorConfigException {
    if (isNull(node)) {
      return false;
    }
    if (node instanceof ScalarNode s
        && s.getTag().equals(Tag.BOOL)
        && YamlV2Resolver.BOOL.matcher(s.getValue()).matches()) {
      return YamlV2Resolver.isTrue(s.getValue());
    }
    throw error(
        unmarshalText(node, "bool")
            + ": invalid "
            + key
            + " '"
            + render(node)
            + "'"
            + where
            + ": allowed values are true, false"
            + (node instanceof ScalarNode s
                    && s.getTag().equals(Tag.STR)
                    && s.getScalarStyle() != DumperOptions.ScalarStyle.PLAIN
                    && YamlV2Resolver.BOOL.matcher(s.getValue()).matches()
                ? " (written in quotes, it is a string: write booleans without quotes)"
                : ""));
  }

  /**
   * Decodes {@code requests_per_unit}, a uint32, of the descriptor named {@code composite}; a bad
   * value's error is the reference's, followed by the key, the descriptor and the allowed range.
   */
  private long requestsPerUnit(Node node, String composite) throws DescriptorConfigException {
    if (isNull(node)) {
      return 0;
    }
    if (node instanceof ScalarNode s && s.getTag().equals(Tag.INT)) {
      BigInteger v = parseYamlInt(s.getValue());
      if (v != null && v.signum() >= 0 && v.compareTo(BigInteger.valueOf(UINT32_MAX)) <= 0) {
        return v.longValue();
      }
    }
    throw error(
        unmarshalText(node, "uint32")
            + ": invalid requests_per_unit '"
            + render(node)
            + "' in rate_limit of '"
            + composite
            + "': allowed values are whole numbers from 0 to "
            + UINT32_MAX
            + (node instanceof ScalarNode s
                    && s.getTag().equals(Tag.STR)
                    && s.getScalarStyle() != DumperOptions.ScalarStyle.PLAIN
                ? " (written in quotes, it is a string: write numbers without quotes)"
                : ""));
  }

  /**
   * Parses an integer as yaml.v2 reads one (sign, underscores, {@code 0x}, {@code 0b}, {@code 0o}
   * in either case, and leading-0 octal); null if malformed.
   */
  static BigInteger parseYamlInt(String text) {
    String t = text.replace("_", "");
    boolean negative = false;
    if (t.startsWith("-") || t.startsWith("+")) {
      negative = t.startsWith("-");
      t = t.substring(1);
    }
    String prefix = t.length() > 2 ? t.substring(0, 2).toLowerCase(Locale.ROOT) : "";
    try {
      BigInteger v;
      if (prefix.equals("0x")) {
        v = new BigInteger(t.substring(2), 16);
      } else if (prefix.equals("0b")) {
        v = new BigInteger(t.substring(2), 2);
      } else if (prefix.equals("0o")) {
        v = new BigInteger(t.substring(2), 8);
      } else if (t.length() > 1 && t.startsWith("0")) {
        v = new BigInteger(t.substring(1), 8);
      } else {
        v = new BigInteger(t);
      }
      return negative ? v.negate() : v;
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private static boolean isNull(Node node) {
    return node instanceof ScalarNode s && s.getTag().equals(Tag.NULL);
  }

  private static String keyOf(NodeTuple t) {
    return ((ScalarNode) t.getKeyNode()).getValue();
  }

  /** Returns {@code tag} as yaml.v2 writes it: {@code !!str} for YAML's own, a local one as is. */
  private static String shortTag(Tag tag) {
    String value = tag.getValue();
    return value.startsWith(Tag.PREFIX) ? "!!" + value.substring(Tag.PREFIX.length()) : value;
  }

  private DescriptorConfigException unmarshal(Node node, String target) {
    return error(unmarshalText(node, target));
  }

  // yaml.v2's type error, as the reference prints it.
  private static String unmarshalText(Node node, String target) {
    String shown =
        node instanceof ScalarNode s
            ? shortTag(s.getTag()) + " `" + s.getValue() + "`"
            : shortTag(node.getTag());
    return "error loading config file: yaml: unmarshal errors: line "
        + line(node)
        + ": cannot unmarshal "
        + shown
        + " into "
        + target;
  }

  private static int line(Node node) {
    return node.getStartMark().getLine() + 1;
  }

  /** The most characters of a rendered node an error shows; a longer one is cut, ending "...". */
  static final int RENDERED_MAX = 200;

  /**
   * Renders a node the way Go's {@code %v} prints the decoded value, cut to its first {@link
   * #RENDERED_MAX} characters followed by {@code ...} when longer; the walk stops there, so a node
   * whose aliases would expand to gigabytes costs no more than a short one.
   */
  static String render(Node node) {
    StringBuilder out = new StringBuilder();
    if (appendRendered(node, out) && out.length() <= RENDERED_MAX) {
      return out.toString();
    }
    out.setLength(RENDERED_MAX);
    return out.append("...").toString();
  }

  // Appends the rendering of node, stopping (false) once out holds more than RENDERED_MAX.
  private static boolean appendRendered(Node node, StringBuilder out) {
    if (node instanceof ScalarNode s) {
      return append(out, s.getTag().equals(Tag.NULL) ? "<nil>" : s.getValue());
    }
    if (node instanceof SequenceNode seq) {
      if (!append(out, "[")) {
        return false;
      }
      boolean first = true;
      for (Node item : seq.getValue()) {
        if (!(first || append(out, " ")) || !appendRendered(item, out)) {
          return false;
        }
        first = false;
      }
      return append(out, "]");
    }
    if (!append(out, "map[")) {
      return false;
    }
    boolean first = true;
    for (NodeTuple t : ((MappingNode) node).getValue()) {
      if (!(first || append(out, " "))
          || !appendRendered(t.getKeyNode(), out)
          || !append(out, ":")
          || !appendRendered(t.getValueNode(), out)) {
        return false;
      }
      first = false;
    }
    return append(out, "]");
  }

  // Appends as much of text as keeps out within one character over RENDERED_MAX; false when over.
  private static boolean append(StringBuilder out, String text) {
    int room = RENDERED_MAX + 1 - out.length();
    out.append(text, 0, Math.max(0, Math.min(room, text.length())));
    return out.length() <= RENDERED_MAX;
  }

  private static String oneLine(String message) {
    return message == null ? "" : message.strip().replaceAll("\\s*\\n\\s*", " ");
  }

  private DescriptorConfigException error(String text) {
    return new DescriptorConfigException(fileName + ": " + text);
  }
}
