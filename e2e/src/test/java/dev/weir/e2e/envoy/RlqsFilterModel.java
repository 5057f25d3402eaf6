package dev.weir.e2e.envoy;

import com.github.xds.type.matcher.v3.Matcher;
import io.envoyproxy.envoy.config.bootstrap.v3.Bootstrap;
import io.envoyproxy.envoy.config.listener.v3.Filter;
import io.envoyproxy.envoy.config.listener.v3.FilterChain;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings;
import io.envoyproxy.envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaBucketSettings.BucketIdBuilder.ValueBuilder;
import io.envoyproxy.envoy.extensions.filters.http.rate_limit_quota.v3.RateLimitQuotaFilterConfig;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The {@code envoy.filters.http.rate_limit_quota} filters of a bootstrap's listeners, and the
 * buckets their matchers build: each {@code RateLimitQuotaBucketSettings} of the matcher tree
 * ({@code on_match} actions and {@code on_no_match}), with a representative bucket id in which
 * every {@code custom_value} (a request attribute) is the text {@code sample}.
 *
 * @param listenerName the listener
 * @param config the filter's configuration
 */
public record RlqsFilterModel(String listenerName, RateLimitQuotaFilterConfig config) {

  /** The filter's name. */
  public static final String RLQS_FILTER = "envoy.filters.http.rate_limit_quota";

  /** The value a representative bucket id gives every {@code custom_value}. */
  public static final String SAMPLE = "sample";

  /** Returns one model per RLQS filter of the bootstrap's listeners. */
  public static List<RlqsFilterModel> all(Bootstrap bootstrap) {
    List<RlqsFilterModel> out = new ArrayList<>();
    for (Listener listener : bootstrap.getStaticResources().getListenersList()) {
      for (FilterChain chain : listener.getFilterChainsList()) {
        for (Filter network : chain.getFiltersList()) {
          if (!network.getTypedConfig().is(HttpConnectionManager.class)) {
            continue;
          }
          HttpConnectionManager hcm =
              RateLimitFilterModel.unpack(network.getTypedConfig(), HttpConnectionManager.class);
          for (HttpFilter filter : hcm.getHttpFiltersList()) {
            if (filter.getName().equals(RLQS_FILTER)) {
              out.add(
                  new RlqsFilterModel(
                      listener.getName(),
                      RateLimitFilterModel.unpack(
                          filter.getTypedConfig(), RateLimitQuotaFilterConfig.class)));
            }
          }
        }
      }
    }
    return out;
  }

  /** Returns the bucket settings of every action of the filter's matcher tree. */
  public List<RateLimitQuotaBucketSettings> bucketSettings() {
    List<RateLimitQuotaBucketSettings> out = new ArrayList<>();
    collect(config.getBucketMatchers(), out);
    return out;
  }

  /** Returns a representative bucket id each bucket settings builds. */
  public List<Map<String, String>> representativeBuckets() {
    List<Map<String, String>> out = new ArrayList<>();
    for (RateLimitQuotaBucketSettings settings : bucketSettings()) {
      Map<String, String> bucket = new TreeMap<>();
      for (Map.Entry<String, ValueBuilder> e :
          settings.getBucketIdBuilder().getBucketIdBuilderMap().entrySet()) {
        bucket.put(
            e.getKey(), e.getValue().hasStringValue() ? e.getValue().getStringValue() : SAMPLE);
      }
      out.add(bucket);
    }
    return out;
  }

  private static void collect(Matcher matcher, List<RateLimitQuotaBucketSettings> out) {
    for (Matcher.MatcherList.FieldMatcher field : matcher.getMatcherList().getMatchersList()) {
      collect(field.getOnMatch(), out);
    }
    if (matcher.hasOnNoMatch()) {
      collect(matcher.getOnNoMatch(), out);
    }
  }

  private static void collect(Matcher.OnMatch onMatch, List<RateLimitQuotaBucketSettings> out) {
    if (onMatch.hasMatcher()) {
      collect(onMatch.getMatcher(), out);
    } else if (onMatch.hasAction()) {
      out.add(
          RateLimitFilterModel.unpack(
              onMatch.getAction().getTypedConfig(), RateLimitQuotaBucketSettings.class));
    }
  }
}
