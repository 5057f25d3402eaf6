package dev.weir.envoy.xds;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import dev.weir.envoy.config.YamlV2Resolver;
import dev.weir.proto.ratelimit.config.v3.RateLimitConfig;
import dev.weir.proto.ratelimit.config.v3.RateLimitDescriptor;
import dev.weir.proto.ratelimit.config.v3.RateLimitPolicy;
import dev.weir.proto.ratelimit.config.v3.RateLimitReplace;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.representer.Representer;

/**
 * Writes an xDS {@link RateLimitConfig} as the descriptor YAML it stands for, as
 * envoyproxy/ratelimit does before loading it: every field under its YAML key, the unit by its
 * enum name ({@code UNKNOWN} when unset, which only an unlimited rule may have), flags only when
 * set, {@code metadata} as the map it holds. The YAML then loads through the same checks as a file.
 */
public final class RateLimitConfigYaml {

  private RateLimitConfigYaml() {}

  /** Returns the YAML text of {@code config}. */
  public static String of(RateLimitConfig config) {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("domain", config.getDomain());
    root.put("descriptors", descriptors(config.getDescriptorsList()));
    DumperOptions options = new DumperOptions();
    options.setDefaultFlowStyle(DumperOptions.FlowStyle.BLOCK);
    options.setSplitLines(false);
    // a control character stays a string (escaped), not a !!binary block the parser refuses
    options.setNonPrintableStyle(DumperOptions.NonPrintableStyle.ESCAPE);
    // yaml.v2's booleans (y, n, ...) as the resolver: a string that reads as one is quoted
    return new Yaml(
            new SafeConstructor(new LoaderOptions()),
            new Representer(options),
            options,
            new YamlV2Resolver())
        .dump(root);
  }

  private static List<Object> descriptors(List<RateLimitDescriptor> descriptors) {
    List<Object> out = new ArrayList<>(descriptors.size());
    for (RateLimitDescriptor d : descriptors) {
      Map<String, Object> map = new LinkedHashMap<>();
      map.put("key", d.getKey());
      if (!d.getValue().isEmpty()) {
        map.put("value", d.getValue());
      }
      if (d.hasRateLimit()) {
        map.put("rate_limit", policy(d.getRateLimit()));
      }
      if (d.getDescriptorsCount() > 0) {
        map.put("descriptors", descriptors(d.getDescriptorsList()));
      }
      if (d.getShadowMode()) {
        map.put("shadow_mode", true);
      }
      if (d.getDetailedMetric()) {
        map.put("detailed_metric", true);
      }
      if (d.getQuotaMode()) {
        map.put("quota_mode", true);
      }
      if (d.hasMetadata()) {
        map.put("metadata", plain(d.getMetadata()));
      }
      out.add(map);
    }
    return out;
  }

  /**
   * Returns {@code struct} as the plain map envoyproxy/ratelimit makes of it ({@code
   * structpb.AsMap}): every number a double, a value of no kind null, lists and nested maps as such.
   * The descriptor YAML reads the same map back: numbers become doubles there too.
   */
  private static Map<String, Object> plain(Struct struct) {
    Map<String, Object> out = new LinkedHashMap<>();
    struct.getFieldsMap().forEach((key, value) -> out.put(key, plain(value)));
    return out;
  }

  private static Object plain(Value value) {
    return switch (value.getKindCase()) {
      case NUMBER_VALUE -> value.getNumberValue();
      case STRING_VALUE -> value.getStringValue();
      case BOOL_VALUE -> value.getBoolValue();
      case STRUCT_VALUE -> plain(value.getStructValue());
      case LIST_VALUE -> {
        List<Object> items = new ArrayList<>(value.getListValue().getValuesCount());
        for (Value item : value.getListValue().getValuesList()) {
          items.add(plain(item));
        }
        yield items;
      }
      case NULL_VALUE, KIND_NOT_SET -> null;
    };
  }

  private static Map<String, Object> policy(RateLimitPolicy policy) {
    Map<String, Object> map = new LinkedHashMap<>();
    map.put("unit", policy.getUnit().name());
    map.put("requests_per_unit", Integer.toUnsignedLong(policy.getRequestsPerUnit()));
    if (policy.getUnlimited()) {
      map.put("unlimited", true);
    }
    if (!policy.getName().isEmpty()) {
      map.put("name", policy.getName());
    }
    if (policy.getReplacesCount() > 0) {
      List<Object> replaces = new ArrayList<>();
      for (RateLimitReplace r : policy.getReplacesList()) {
        replaces.add(Map.of("name", r.getName()));
      }
      map.put("replaces", replaces);
    }
    return map;
  }
}
