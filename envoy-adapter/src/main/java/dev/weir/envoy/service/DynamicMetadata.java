package dev.weir.envoy.service;

import com.google.protobuf.ListValue;
import com.google.protobuf.NullValue;
import com.google.protobuf.Struct;
import com.google.protobuf.TextFormat;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The response's {@code dynamic_metadata} as envoyproxy/ratelimit writes it when {@code
 * RESPONSE_DYNAMIC_METADATA} is on (Envoy stores it under the filter's namespace, {@code
 * envoy.filters.http.ratelimit}): {@code domain}; {@code descriptors}, each with its {@code entries}
 * as {@code "key=value"} strings, its {@code limit} override and its {@code hitsAddend} when it
 * carries them; the request's {@code hitsAddend} when not 0; and {@code metadata}, the rules'
 * {@code metadata} of every descriptor that is not over its limit merged in request order (a key
 * set by an earlier rule stays, except that two maps under one key are merged the same way).
 *
 * <p>Weir adds which rule fired when a descriptor's counter is over its limit: {@code
 * overLimitRule} (the rule's YAML {@code name}, else its descriptor path), {@code
 * overLimitRequestsPerUnit}, {@code overLimitUnit} (e.g. {@code MINUTE}) and {@code
 * overLimitShadowMode} (true when shadow mode answered OK instead), taken from the first descriptor
 * over its limit that is not in shadow mode, else the first over-limit one in shadow mode.
 */
final class DynamicMetadata {

  private DynamicMetadata() {}

  /** The key naming the rule that fired. */
  static final String OVER_LIMIT_RULE = "overLimitRule";

  /** The key of the fired rule's {@code requests_per_unit}. */
  static final String OVER_LIMIT_REQUESTS_PER_UNIT = "overLimitRequestsPerUnit";

  /** The key of the fired rule's window unit. */
  static final String OVER_LIMIT_UNIT = "overLimitUnit";

  /** The key saying whether shadow mode answered OK although the rule fired. */
  static final String OVER_LIMIT_SHADOW_MODE = "overLimitShadowMode";

  /**
   * Returns the metadata of {@code request}, whose descriptors were planned and answered so, naming
   * {@code fired} (null when no counter was over its limit) as the rule that fired, answered OK by
   * shadow mode when {@code shadowed}.
   */
  static Struct of(
      RateLimitRequest request,
      List<DescriptorPlan> plans,
      List<DescriptorStatus> statuses,
      DescriptorPlan.Policy fired,
      boolean shadowed) {
    Struct.Builder out = Struct.newBuilder();
    out.putFields("domain", string(request.getDomain()));
    ListValue.Builder descriptors = ListValue.newBuilder();
    for (RateLimitDescriptor descriptor : request.getDescriptorsList()) {
      descriptors.addValues(Value.newBuilder().setStructValue(descriptor(descriptor)));
    }
    out.putFields("descriptors", Value.newBuilder().setListValue(descriptors).build());
    if (request.getHitsAddend() != 0) {
      out.putFields("hitsAddend", number(Integer.toUnsignedLong(request.getHitsAddend())));
    }
    Map<String, Object> merged = new LinkedHashMap<>();
    for (int i = 0; i < plans.size(); i++) {
      if (plans.get(i) instanceof DescriptorPlan.Limited limited
          && statuses.get(i).getCode() != Code.OVER_LIMIT) {
        mergeInto(merged, limited.metadata());
      }
    }
    if (!merged.isEmpty()) {
      out.putFields("metadata", value(merged));
    }
    if (fired != null) {
      out.putFields(OVER_LIMIT_RULE, string(fired.label()));
      out.putFields(OVER_LIMIT_REQUESTS_PER_UNIT, number(fired.requestsPerUnit()));
      out.putFields(OVER_LIMIT_UNIT, string(fired.unit().name()));
      out.putFields(
          OVER_LIMIT_SHADOW_MODE, Value.newBuilder().setBoolValue(shadowed).build());
    }
    return out.build();
  }

  private static Struct descriptor(RateLimitDescriptor descriptor) {
    Struct.Builder out = Struct.newBuilder();
    ListValue.Builder entries = ListValue.newBuilder();
    for (RateLimitDescriptor.Entry entry : descriptor.getEntriesList()) {
      entries.addValues(string(entry.getKey() + "=" + entry.getValue()));
    }
    out.putFields("entries", Value.newBuilder().setListValue(entries).build());
    if (descriptor.hasLimit()) {
      out.putFields("limit", string(TextFormat.shortDebugString(descriptor.getLimit())));
    }
    if (descriptor.hasHitsAddend()) {
      // a uint64: 2^63 and above are negative as a Java long
      long addend = descriptor.getHitsAddend().getValue();
      out.putFields(
          "hitsAddend",
          number(addend >= 0 ? addend : (double) ((addend >>> 1) | (addend & 1)) * 2));
    }
    return out.build();
  }

  /** Adds the keys of {@code source} that {@code target} lacks, merging maps found in both. */
  @SuppressWarnings("unchecked")
  static void mergeInto(Map<String, Object> target, Map<String, Object> source) {
    for (Map.Entry<String, Object> e : source.entrySet()) {
      Object existing = target.get(e.getKey());
      if (existing == null && !target.containsKey(e.getKey())) {
        target.put(
            e.getKey(),
            e.getValue() instanceof Map<?, ?> m
                ? new LinkedHashMap<>((Map<String, Object>) m)
                : e.getValue());
      } else if (existing instanceof Map<?, ?> mine && e.getValue() instanceof Map<?, ?> theirs) {
        Map<String, Object> copy = new LinkedHashMap<>((Map<String, Object>) mine);
        mergeInto(copy, (Map<String, Object>) theirs);
        target.put(e.getKey(), copy);
      }
    }
  }

  /** Returns {@code v} (a compiled YAML value: map, list, string, number, boolean or null). */
  @SuppressWarnings("unchecked")
  static Value value(Object v) {
    if (v == null) {
      return Value.newBuilder().setNullValue(NullValue.NULL_VALUE).build();
    }
    if (v instanceof Map<?, ?> map) {
      Struct.Builder s = Struct.newBuilder();
      ((Map<String, Object>) map).forEach((k, item) -> s.putFields(k, value(item)));
      return Value.newBuilder().setStructValue(s).build();
    }
    if (v instanceof List<?> list) {
      ListValue.Builder l = ListValue.newBuilder();
      list.forEach(item -> l.addValues(value(item)));
      return Value.newBuilder().setListValue(l).build();
    }
    if (v instanceof Boolean b) {
      return Value.newBuilder().setBoolValue(b).build();
    }
    if (v instanceof Number n) {
      return number(n.doubleValue());
    }
    return string(v.toString());
  }

  private static Value string(String s) {
    return Value.newBuilder().setStringValue(s).build();
  }

  private static Value number(double d) {
    return Value.newBuilder().setNumberValue(d).build();
  }
}
