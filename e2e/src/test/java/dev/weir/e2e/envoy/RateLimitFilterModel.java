package dev.weir.e2e.envoy;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.Struct;
import com.google.protobuf.UInt64Value;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.bootstrap.v3.Bootstrap;
import io.envoyproxy.envoy.config.listener.v3.Filter;
import io.envoyproxy.envoy.config.listener.v3.FilterChain;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.HeaderMatcher;
import io.envoyproxy.envoy.config.route.v3.RateLimit.Action;
import io.envoyproxy.envoy.config.route.v3.Route;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.config.route.v3.RouteMatch;
import io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.RateLimitOverride;
import io.envoyproxy.envoy.extensions.filters.http.ratelimit.v3.RateLimit;
import io.envoyproxy.envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute;
import io.envoyproxy.envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute.VhRateLimitsOptions;
import io.envoyproxy.envoy.extensions.filters.http.set_metadata.v3.Config;
import io.envoyproxy.envoy.extensions.filters.http.set_metadata.v3.Metadata;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.envoyproxy.envoy.type.matcher.v3.StringMatcher;
import io.envoyproxy.envoy.type.metadata.v3.MetadataKey;
import io.envoyproxy.envoy.type.v3.RateLimitUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Envoy's HTTP rate-limit filter ({@code envoy.filters.http.ratelimit}) on one listener of a
 * bootstrap, reduced to what it sends: for a request, the {@code ShouldRateLimit} call (domain and
 * descriptors) it makes, if any.
 *
 * <p>Follows Envoy's filter: the most specific {@code RateLimitPerRoute} with {@code rate_limits}
 * replaces the route's and the virtual host's; otherwise the route's {@code rate_limits} apply and
 * the virtual host's are added per {@code vh_rate_limits} (OVERRIDE: only when the route has none).
 * Each {@code RateLimit} yields one descriptor whose entries its actions append in order; an action
 * that cannot produce its entry drops the descriptor unless it may skip itself. A {@code limit}
 * override is read from dynamic metadata (written here by {@code envoy.filters.http.set_metadata})
 * and only on the route/virtual-host path; a per-descriptor {@code hits_addend} only on the
 * per-filter-config path, where Envoy honors each. Configuration this model does not cover
 * (actions, matchers or route features it does not know) is an error, never silently ignored.
 */
public final class RateLimitFilterModel {
  /** The filter name Envoy registers the HTTP rate-limit filter under. */
  public static final String RATE_LIMIT_FILTER = "envoy.filters.http.ratelimit";

  private static final String HCM_FILTER = "envoy.filters.network.http_connection_manager";
  private static final String SET_METADATA_FILTER = "envoy.filters.http.set_metadata";

  private final Bootstrap bootstrap;
  private final String listenerName;
  private final RouteConfiguration routes;
  private final String filterName;
  private final RateLimit filterConfig;
  private final Map<String, Struct> dynamicMetadata;

  private RateLimitFilterModel(
      Bootstrap bootstrap,
      String listenerName,
      RouteConfiguration routes,
      String filterName,
      RateLimit filterConfig,
      Map<String, Struct> dynamicMetadata) {
    this.bootstrap = bootstrap;
    this.listenerName = listenerName;
    this.routes = routes;
    this.filterName = filterName;
    this.filterConfig = filterConfig;
    this.dynamicMetadata = dynamicMetadata;
  }

  /**
   * Returns one model per listener of the bootstrap whose HTTP connection manager runs the
   * rate-limit filter.
   */
  public static List<RateLimitFilterModel> all(Bootstrap bootstrap) {
    List<RateLimitFilterModel> models = new ArrayList<>();
    for (Listener listener : bootstrap.getStaticResources().getListenersList()) {
      Optional<HttpConnectionManager> hcm = httpConnectionManager(listener);
      if (hcm.isPresent()
          && hcm.get().getHttpFiltersList().stream().anyMatch(RateLimitFilterModel::isRateLimit)) {
        models.add(of(bootstrap, listener.getName()));
      }
    }
    return models;
  }

  /** Returns the model of the named listener. */
  public static RateLimitFilterModel of(Bootstrap bootstrap, String listenerName) {
    Listener listener =
        bootstrap.getStaticResources().getListenersList().stream()
            .filter(candidate -> candidate.getName().equals(listenerName))
            .findFirst()
            .orElseThrow(
                () -> new IllegalArgumentException("no listener named '" + listenerName + "'"));
    HttpConnectionManager hcm =
        httpConnectionManager(listener)
            .orElseThrow(
                () ->
                    new IllegalArgumentException(
                        "listener '" + listenerName + "' has no " + HCM_FILTER));
    if (!hcm.hasRouteConfig()) {
      throw new UnsupportedOperationException(
          "listener '"
              + listenerName
              + "': only an inline route_config is modeled (found rds or scoped routes)");
    }
    String filterName = null;
    RateLimit filterConfig = null;
    Map<String, Struct> metadata = new LinkedHashMap<>();
    for (HttpFilter filter : hcm.getHttpFiltersList()) {
      if (isRateLimit(filter) && filterConfig == null) {
        filterName = filter.getName();
        filterConfig = unpack(filter.getTypedConfig(), RateLimit.class);
      } else if (isSetMetadata(filter) && filterConfig == null) {
        applySetMetadata(unpack(filter.getTypedConfig(), Config.class), metadata);
      }
    }
    if (filterConfig == null) {
      throw new IllegalArgumentException(
          "listener '" + listenerName + "' has no " + RATE_LIMIT_FILTER + " filter");
    }
    return new RateLimitFilterModel(
        bootstrap,
        listenerName,
        hcm.getRouteConfig(),
        filterName,
        filterConfig,
        Map.copyOf(metadata));
  }

  /** Returns the HTTP connection manager of the listener's first filter chain that has one. */
  public static Optional<HttpConnectionManager> httpConnectionManager(Listener listener) {
    for (FilterChain chain : listener.getFilterChainsList()) {
      for (Filter filter : chain.getFiltersList()) {
        if (filter.getName().equals(HCM_FILTER)
            || filter
                .getTypedConfig()
                .getTypeUrl()
                .endsWith("/" + HttpConnectionManager.getDescriptor().getFullName())) {
          return Optional.of(unpack(filter.getTypedConfig(), HttpConnectionManager.class));
        }
      }
    }
    return Optional.empty();
  }

  /** Returns the listener's name. */
  public String listenerName() {
    return listenerName;
  }

  /** Returns the rate-limit filter's configuration. */
  public RateLimit filterConfig() {
    return filterConfig;
  }

  /** Returns the listener's routes. */
  public RouteConfiguration routes() {
    return routes;
  }

  /**
   * Returns the {@code ShouldRateLimit} request Envoy sends for {@code request}, or empty when the
   * request produces no descriptor (then Envoy makes no call).
   */
  public Optional<RateLimitRequest> requestFor(HttpRequestSample request) {
    VirtualHost virtualHost = virtualHostFor(request);
    Route route = routeFor(virtualHost, request);
    RouteLimits limits = limitsOf(virtualHost, route);
    List<RateLimitDescriptor> descriptors = new ArrayList<>();
    for (io.envoyproxy.envoy.config.route.v3.RateLimit limit : limits.limits()) {
      descriptorFor(limit, route, request, limits.perFilterConfig()).ifPresent(descriptors::add);
    }
    if (descriptors.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(
        RateLimitRequest.newBuilder()
            .setDomain(limits.domain())
            .addAllDescriptors(descriptors)
            .setHitsAddend(0)
            .build());
  }

  /** Returns, for every route of every virtual host, the rate limits that apply to it. */
  public List<RouteLimits> allRouteLimits() {
    List<RouteLimits> all = new ArrayList<>();
    for (VirtualHost virtualHost : routes.getVirtualHostsList()) {
      for (Route route : virtualHost.getRoutesList()) {
        all.add(limitsOf(virtualHost, route));
      }
    }
    return all;
  }

  /**
   * Returns the descriptors one route's rate limits can produce, with representative values where
   * Envoy would take them from the request: {@code sample-<header>} for request headers, {@link
   * #SAMPLE_CLIENT} for the client address. A limit with actions that may skip themselves yields
   * the descriptor with and without those entries. Descriptors that only exist when a header
   * matcher matches ({@code header_value_match}) are included.
   */
  public List<RateLimitDescriptor> representativeDescriptors(RouteLimits limits) {
    List<RateLimitDescriptor> descriptors = new ArrayList<>();
    for (io.envoyproxy.envoy.config.route.v3.RateLimit limit : limits.limits()) {
      RateLimitDescriptor.Builder all = RateLimitDescriptor.newBuilder();
      RateLimitDescriptor.Builder withoutSkippable = RateLimitDescriptor.newBuilder();
      for (Action action : limit.getActionsList()) {
        RateLimitDescriptor.Entry entry = representativeEntry(action, limits.route());
        all.addEntries(entry);
        if (!skipsIfAbsent(action)) {
          withoutSkippable.addEntries(entry);
        }
      }
      descriptors.add(all.build());
      if (withoutSkippable.getEntriesCount() != all.getEntriesCount()
          && withoutSkippable.getEntriesCount() > 0) {
        descriptors.add(withoutSkippable.build());
      }
    }
    return descriptors;
  }

  /** The client address representative descriptors carry for {@code remote_address}. */
  public static final String SAMPLE_CLIENT = "203.0.113.7";

  private RateLimitDescriptor.Entry representativeEntry(Action action, Route route) {
    HttpRequestSample anyRequest = HttpRequestSample.get("/").from(SAMPLE_CLIENT);
    return switch (action.getActionSpecifierCase()) {
      case REQUEST_HEADERS ->
          entry(
              action.getRequestHeaders().getDescriptorKey(),
              "sample-" + action.getRequestHeaders().getHeaderName().replace(":", ""));
      case HEADER_VALUE_MATCH -> {
        var match = action.getHeaderValueMatch();
        yield entry(
            match.getDescriptorKey().isEmpty() ? "header_match" : match.getDescriptorKey(),
            match.getDescriptorValue());
      }
      default ->
          entryFor(action, route, anyRequest)
              .orElseThrow(
                  () -> new IllegalStateException("no representative entry for " + action));
    };
  }

  /**
   * The rate limits Envoy applies on one route.
   *
   * @param virtualHost the virtual host's name
   * @param route the route
   * @param domain the domain sent with these limits (the filter's, or the per-route override)
   * @param limits the applicable {@code RateLimit} entries of the filter's stage
   * @param perFilterConfig true when they come from {@code typed_per_filter_config}
   */
  public record RouteLimits(
      String virtualHost,
      Route route,
      String domain,
      List<io.envoyproxy.envoy.config.route.v3.RateLimit> limits,
      boolean perFilterConfig) {}

  private RouteLimits limitsOf(VirtualHost virtualHost, Route route) {
    Optional<RateLimitPerRoute> perRoute = perRouteConfig(virtualHost, route);
    String domain =
        perRoute
            .map(RateLimitPerRoute::getDomain)
            .filter(d -> !d.isEmpty())
            .orElse(filterConfig.getDomain());
    if (perRoute.isPresent() && perRoute.get().getRateLimitsCount() > 0) {
      return new RouteLimits(
          virtualHost.getName(), route, domain, perRoute.get().getRateLimitsList(), true);
    }
    List<io.envoyproxy.envoy.config.route.v3.RateLimit> routeLimits =
        route.hasRoute() ? route.getRoute().getRateLimitsList() : List.of();
    List<io.envoyproxy.envoy.config.route.v3.RateLimit> applied =
        new ArrayList<>(ofStage(routeLimits));
    boolean includeVirtualHost =
        switch (virtualHostOption(route, perRoute)) {
          case INCLUDE -> true;
          case IGNORE -> false;
          default -> routeLimits.isEmpty();
        };
    if (includeVirtualHost) {
      applied.addAll(ofStage(virtualHost.getRateLimitsList()));
    }
    return new RouteLimits(virtualHost.getName(), route, domain, List.copyOf(applied), false);
  }

  @SuppressWarnings("deprecation")
  private static VhRateLimitsOptions virtualHostOption(
      Route route, Optional<RateLimitPerRoute> perRoute) {
    if (route.hasRoute()
        && route.getRoute().hasIncludeVhRateLimits()
        && route.getRoute().getIncludeVhRateLimits().getValue()) {
      return VhRateLimitsOptions.INCLUDE;
    }
    return perRoute.map(RateLimitPerRoute::getVhRateLimits).orElse(VhRateLimitsOptions.OVERRIDE);
  }

  private List<io.envoyproxy.envoy.config.route.v3.RateLimit> ofStage(
      List<io.envoyproxy.envoy.config.route.v3.RateLimit> limits) {
    return limits.stream()
        .filter(
            limit ->
                (limit.hasStage() ? limit.getStage().getValue() : 0) == filterConfig.getStage())
        .toList();
  }

  private Optional<RateLimitPerRoute> perRouteConfig(VirtualHost virtualHost, Route route) {
    Any routeConfig = route.getTypedPerFilterConfigMap().get(filterName);
    if (routeConfig != null) {
      return Optional.of(unpack(routeConfig, RateLimitPerRoute.class));
    }
    Any hostConfig = virtualHost.getTypedPerFilterConfigMap().get(filterName);
    return hostConfig == null
        ? Optional.empty()
        : Optional.of(unpack(hostConfig, RateLimitPerRoute.class));
  }

  private Optional<RateLimitDescriptor> descriptorFor(
      io.envoyproxy.envoy.config.route.v3.RateLimit limit,
      Route route,
      HttpRequestSample request,
      boolean perFilterConfig) {
    if (limit.getApplyOnStreamDone()) {
      throw new UnsupportedOperationException(
          "apply_on_stream_done descriptors are sent after the response");
    }
    RateLimitDescriptor.Builder descriptor = RateLimitDescriptor.newBuilder();
    for (Action action : limit.getActionsList()) {
      Optional<RateLimitDescriptor.Entry> entry = entryFor(action, route, request);
      if (entry.isPresent()) {
        descriptor.addEntries(entry.get());
      } else if (!skipsIfAbsent(action)) {
        return Optional.empty();
      }
    }
    if (descriptor.getEntriesCount() == 0) {
      return Optional.empty();
    }
    if (!perFilterConfig && limit.hasLimit()) {
      limitOverride(limit.getLimit()).ifPresent(descriptor::setLimit);
    }
    if (perFilterConfig && limit.hasHitsAddend()) {
      if (!limit.getHitsAddend().getFormat().isEmpty()) {
        throw new UnsupportedOperationException("hits_addend.format is not modeled");
      }
      descriptor.setHitsAddend(UInt64Value.of(limit.getHitsAddend().getNumber().getValue()));
    }
    return Optional.of(descriptor.build());
  }

  private Optional<RateLimitDescriptor.Entry> entryFor(
      Action action, Route route, HttpRequestSample request) {
    return switch (action.getActionSpecifierCase()) {
      case SOURCE_CLUSTER -> Optional.of(entry("source_cluster", bootstrap.getNode().getCluster()));
      case DESTINATION_CLUSTER -> Optional.of(entry("destination_cluster", routedCluster(route)));
      case REQUEST_HEADERS -> {
        String value = request.headerValue(action.getRequestHeaders().getHeaderName());
        yield value == null
            ? Optional.empty()
            : Optional.of(entry(action.getRequestHeaders().getDescriptorKey(), value));
      }
      case REMOTE_ADDRESS -> Optional.of(entry("remote_address", request.remoteAddress()));
      case GENERIC_KEY -> {
        String key = action.getGenericKey().getDescriptorKey();
        yield Optional.of(
            entry(
                key.isEmpty() ? "generic_key" : key, action.getGenericKey().getDescriptorValue()));
      }
      case HEADER_VALUE_MATCH -> {
        var match = action.getHeaderValueMatch();
        boolean expected = !match.hasExpectMatch() || match.getExpectMatch().getValue();
        boolean matched =
            match.getHeadersList().stream().allMatch(header -> matches(header, request));
        String key = match.getDescriptorKey().isEmpty() ? "header_match" : match.getDescriptorKey();
        yield matched == expected
            ? Optional.of(entry(key, match.getDescriptorValue()))
            : Optional.empty();
      }
      default ->
          throw new UnsupportedOperationException(
              "rate-limit action " + action.getActionSpecifierCase() + " is not modeled");
    };
  }

  private static boolean skipsIfAbsent(Action action) {
    return action.hasRequestHeaders() && action.getRequestHeaders().getSkipIfAbsent();
  }

  /** Returns the cluster a route sends to, as the {@code destination_cluster} action reports it. */
  public static String routedCluster(Route route) {
    if (!route.hasRoute() || route.getRoute().getCluster().isEmpty()) {
      throw new UnsupportedOperationException(
          "route '"
              + route.getName()
              + "': destination_cluster is only modeled for a route with a fixed cluster");
    }
    return route.getRoute().getCluster();
  }

  private Optional<RateLimitOverride> limitOverride(
      io.envoyproxy.envoy.config.route.v3.RateLimit.Override limit) {
    MetadataKey key = limit.getDynamicMetadata().getMetadataKey();
    Struct namespace = dynamicMetadata.get(key.getKey());
    if (namespace == null) {
      return Optional.empty();
    }
    Value value = Value.newBuilder().setStructValue(namespace).build();
    for (MetadataKey.PathSegment segment : key.getPathList()) {
      if (!value.hasStructValue() || !value.getStructValue().containsFields(segment.getKey())) {
        return Optional.empty();
      }
      value = value.getStructValue().getFieldsOrThrow(segment.getKey());
    }
    if (!value.hasStructValue()) {
      return Optional.empty();
    }
    Value requests =
        value.getStructValue().getFieldsOrDefault("requests_per_unit", Value.getDefaultInstance());
    Value unit = value.getStructValue().getFieldsOrDefault("unit", Value.getDefaultInstance());
    if (!requests.hasNumberValue() || !unit.hasStringValue()) {
      return Optional.empty();
    }
    RateLimitUnit parsed;
    try {
      parsed = RateLimitUnit.valueOf(unit.getStringValue());
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
    return Optional.of(
        RateLimitOverride.newBuilder()
            .setRequestsPerUnit((int) requests.getNumberValue())
            .setUnit(parsed)
            .build());
  }

  private VirtualHost virtualHostFor(HttpRequestSample request) {
    String host = request.headerValue("host");
    for (VirtualHost virtualHost : routes.getVirtualHostsList()) {
      for (String domain : virtualHost.getDomainsList()) {
        if (domain.equals("*") || domain.equalsIgnoreCase(host)) {
          return virtualHost;
        }
      }
    }
    throw new IllegalArgumentException(
        "listener '" + listenerName + "': no virtual host for " + request);
  }

  private static Route routeFor(VirtualHost virtualHost, HttpRequestSample request) {
    for (Route route : virtualHost.getRoutesList()) {
      if (matches(route.getMatch(), request)) {
        return route;
      }
    }
    throw new IllegalArgumentException(
        "virtual host '" + virtualHost.getName() + "': no route for " + request);
  }

  private static boolean matches(RouteMatch match, HttpRequestSample request) {
    if (match.getQueryParametersCount() > 0
        || match.hasRuntimeFraction()
        || match.hasGrpc()
        || match.getDynamicMetadataCount() > 0) {
      throw new UnsupportedOperationException("route match " + match + " is not modeled");
    }
    boolean caseSensitive = !match.hasCaseSensitive() || match.getCaseSensitive().getValue();
    String path = request.pathWithoutQuery();
    boolean pathMatches =
        switch (match.getPathSpecifierCase()) {
          case PREFIX ->
              caseSensitive
                  ? path.startsWith(match.getPrefix())
                  : path.toLowerCase(Locale.ROOT)
                      .startsWith(match.getPrefix().toLowerCase(Locale.ROOT));
          case PATH ->
              caseSensitive ? path.equals(match.getPath()) : path.equalsIgnoreCase(match.getPath());
          case SAFE_REGEX ->
              Pattern.compile(match.getSafeRegex().getRegex()).matcher(path).matches();
          default ->
              throw new UnsupportedOperationException(
                  "route path match " + match.getPathSpecifierCase() + " is not modeled");
        };
    return pathMatches
        && match.getHeadersList().stream().allMatch(header -> matches(header, request));
  }

  @SuppressWarnings("deprecation")
  private static boolean matches(HeaderMatcher matcher, HttpRequestSample request) {
    String value = request.headerValue(matcher.getName());
    if (value == null && matcher.getTreatMissingHeaderAsEmpty()) {
      value = "";
    }
    boolean result;
    if (matcher.getHeaderMatchSpecifierCase()
        == HeaderMatcher.HeaderMatchSpecifierCase.PRESENT_MATCH) {
      result = (value != null) == matcher.getPresentMatch();
    } else if (value == null) {
      return false;
    } else {
      result =
          switch (matcher.getHeaderMatchSpecifierCase()) {
            case EXACT_MATCH -> value.equals(matcher.getExactMatch());
            case PREFIX_MATCH -> value.startsWith(matcher.getPrefixMatch());
            case SUFFIX_MATCH -> value.endsWith(matcher.getSuffixMatch());
            case CONTAINS_MATCH -> value.contains(matcher.getContainsMatch());
            case SAFE_REGEX_MATCH ->
                Pattern.compile(matcher.getSafeRegexMatch().getRegex()).matcher(value).matches();
            case STRING_MATCH -> matches(matcher.getStringMatch(), value);
            case HEADERMATCHSPECIFIER_NOT_SET -> true;
            default ->
                throw new UnsupportedOperationException(
                    "header match " + matcher.getHeaderMatchSpecifierCase() + " is not modeled");
          };
    }
    return result != matcher.getInvertMatch();
  }

  private static boolean matches(StringMatcher matcher, String value) {
    boolean ignoreCase = matcher.getIgnoreCase();
    String subject = ignoreCase ? value.toLowerCase(Locale.ROOT) : value;
    return switch (matcher.getMatchPatternCase()) {
      case EXACT -> subject.equals(fold(matcher.getExact(), ignoreCase));
      case PREFIX -> subject.startsWith(fold(matcher.getPrefix(), ignoreCase));
      case SUFFIX -> subject.endsWith(fold(matcher.getSuffix(), ignoreCase));
      case CONTAINS -> subject.contains(fold(matcher.getContains(), ignoreCase));
      case SAFE_REGEX ->
          Pattern.compile(matcher.getSafeRegex().getRegex()).matcher(value).matches();
      default ->
          throw new UnsupportedOperationException(
              "string match " + matcher.getMatchPatternCase() + " is not modeled");
    };
  }

  private static String fold(String text, boolean ignoreCase) {
    return ignoreCase ? text.toLowerCase(Locale.ROOT) : text;
  }

  private static void applySetMetadata(Config config, Map<String, Struct> metadata) {
    if (config.getMetadataCount() == 0 && !config.getMetadataNamespace().isEmpty()) {
      throw new UnsupportedOperationException(
          "set_metadata's deprecated metadata_namespace/value are not modeled");
    }
    for (Metadata entry : config.getMetadataList()) {
      if (entry.hasTypedValue()) {
        throw new UnsupportedOperationException("set_metadata typed_value is not modeled");
      }
      Struct existing = metadata.get(entry.getMetadataNamespace());
      if (existing == null) {
        metadata.put(entry.getMetadataNamespace(), entry.getValue());
      } else if (entry.getAllowOverwrite()) {
        metadata.put(
            entry.getMetadataNamespace(),
            existing.toBuilder().putAllFields(entry.getValue().getFieldsMap()).build());
      }
    }
  }

  private static boolean isRateLimit(HttpFilter filter) {
    return filter
        .getTypedConfig()
        .getTypeUrl()
        .endsWith("/" + RateLimit.getDescriptor().getFullName());
  }

  private static boolean isSetMetadata(HttpFilter filter) {
    return filter.getName().equals(SET_METADATA_FILTER)
        || filter
            .getTypedConfig()
            .getTypeUrl()
            .endsWith("/" + Config.getDescriptor().getFullName());
  }

  private static RateLimitDescriptor.Entry entry(String key, String value) {
    return RateLimitDescriptor.Entry.newBuilder().setKey(key).setValue(value).build();
  }

  /** Unpacks a typed_config, failing with the expected and actual type when they differ. */
  public static <T extends Message> T unpack(Any any, Class<T> type) {
    try {
      return any.unpack(type);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalArgumentException(
          "typed_config " + any.getTypeUrl() + " is not a " + type.getName(), e);
    }
  }
}
