package dev.weir.server;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.weir.core.limiter.InputLimits;
import dev.weir.envoy.EnvoyAdapter;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.match.Entry;
import dev.weir.envoy.service.Explainer;
import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpCall;
import dev.weir.http.HttpRoute;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;

/**
 * {@code POST /v1/Explain}: the {@code explain} command's answer over HTTP, for the loaded
 * descriptor config. The body is Envoy's {@code RateLimitRequest} as JSON ({@code
 * {"domain":"...","descriptors":[{"entries":[{"key":"...","value":"..."}]}]}}); the answer is
 * {@code {"lines":["descriptor 1: ...",...]}}, the lines {@link Explainer} prints. It counts
 * nothing and reads no counter. Bad input is answered 400 naming the field, the value and what is
 * allowed; with the Envoy adapter off, 404 saying how to turn it on.
 */
final class ExplainRoute {

  /** The route's path. */
  static final String PATH = "/v1/Explain";

  private final JsonFormat.Parser parser = JsonFormat.parser();
  private final EnvoyAdapter envoy;
  private final Explainer explainer;

  /**
   * Creates the route explaining with {@code envoy}'s loaded config (null when the adapter is off),
   * writing counter keys as a node with {@code limits} does.
   */
  ExplainRoute(EnvoyAdapter envoy, InputLimits limits) {
    this.envoy = envoy;
    this.explainer = new Explainer(limits);
  }

  /** Returns the route to mount on the HTTP listener. */
  HttpRoute route() {
    return HttpRoute.post(PATH, call -> answer(call).completed());
  }

  /** Returns the answer to {@code call}. */
  HttpAnswer answer(HttpCall call) {
    if (envoy == null) {
      return error(
          404,
          Status.Code.NOT_FOUND,
          "explain needs the Envoy rate-limit service, which is off on this node: set"
              + " WEIR_ENVOY_CONFIG to a descriptor YAML file or folder");
    }
    Optional<EnvoyConfig> config = envoy.config();
    if (config.isEmpty()) {
      return error(503, Status.Code.UNAVAILABLE, "no descriptor config is loaded yet");
    }
    RateLimitRequest.Builder request = RateLimitRequest.newBuilder();
    try {
      parser.merge(new String(call.body(), StandardCharsets.UTF_8), request);
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      return invalid(
          "invalid request body: "
              + e.getMessage()
              + "; it must be {\"domain\":\"...\",\"descriptors\":[{\"entries\":"
              + "[{\"key\":\"...\",\"value\":\"...\"}]}]}");
    }
    String domain = request.getDomain();
    if (config.get().domain(domain).isEmpty()) {
      return invalid(
          "domain is "
              + (domain.isEmpty() ? "empty" : "'" + domain + "'")
              + "; it must be a domain of the loaded config: "
              + String.join(", ", new TreeSet<>(config.get().domains().keySet())));
    }
    if (request.getDescriptorsCount() == 0) {
      return invalid("descriptors is empty; it must hold at least one descriptor");
    }
    List<List<Entry>> descriptors = new ArrayList<>();
    for (int d = 0; d < request.getDescriptorsCount(); d++) {
      RateLimitDescriptor descriptor = request.getDescriptors(d);
      if (descriptor.getEntriesCount() == 0) {
        return invalid(
            "descriptors[" + d + "].entries is empty; it must hold at least one key and value");
      }
      List<Entry> entries = new ArrayList<>();
      for (int e = 0; e < descriptor.getEntriesCount(); e++) {
        RateLimitDescriptor.Entry entry = descriptor.getEntries(e);
        if (entry.getKey().isEmpty()) {
          return invalid(
              "descriptors[" + d + "].entries[" + e + "].key is empty; it must be a non-empty key");
        }
        entries.add(new Entry(entry.getKey(), entry.getValue()));
      }
      descriptors.add(entries);
    }
    List<String> lines =
        explainer.explain(config.get(), domain, descriptors, policy -> Optional.empty());
    StringBuilder out = new StringBuilder("{\"lines\":[");
    for (int i = 0; i < lines.size(); i++) {
      out.append(i == 0 ? "" : ",").append(HttpAnswer.jsonString(lines.get(i)));
    }
    return HttpAnswer.json(200, out.append("]}").toString());
  }

  private static HttpAnswer invalid(String message) {
    return error(400, Status.Code.INVALID_ARGUMENT, message);
  }

  private static HttpAnswer error(int status, Status.Code code, String message) {
    return HttpAnswer.error(status, code.value(), message);
  }
}
