package dev.weir.server;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.limiter.RateLimitService;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.model.RateLimitResponse;
import dev.weir.core.time.Clock;
import dev.weir.envoy.EnvoyAdapter;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.service.Explainer;
import dev.weir.http.HttpAnswer;
import dev.weir.http.HttpCall;
import dev.weir.http.HttpRoute;
import dev.weir.http.LongNumbers;
import dev.weir.http.ParserMessages;
import dev.weir.http.ProtoJsonTypes;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * {@code POST /v1/Explain}: the {@code explain} command's answer over HTTP, for the loaded
 * descriptor config. The body is Envoy's {@code RateLimitRequest} as JSON ({@code
 * {"domain":"...","descriptors":[{"entries":[{"key":"...","value":"..."}]}]}}); the answer is
 * {@code {"lines":["descriptor 1: ...",...]}}, the lines {@link Explainer} prints, with each
 * counted policy's current count in the cluster (checked with 0 hits, as {@code explain --node}
 * does; an absent counter is created full), the counters checked in calls of at most {@link
 * RateLimitService#MAX_BATCH_SIZE} however many the descriptors match. Bad input, more than {@link
 * RateLimitService#MAX_BATCH_SIZE} descriptors too, is answered 400 naming the field, the value
 * and what is allowed; with the Envoy adapter off, 404 saying how to turn it on.
 */
final class ExplainRoute {

  /** What a body the JSON parser refuses is told it must look like. */
  private static final String BODY_SHAPE =
      "; it must be {\"domain\":\"...\",\"descriptors\":[{\"entries\":"
          + "[{\"key\":\"...\",\"value\":\"...\"}]}]}";

  /** The route's path. */
  static final String PATH = "/v1/Explain";

  /** The most the current counts are waited for; the lines come without them after that. */
  static final long COUNTS_TIMEOUT_MILLIS = 5000;

  private final JsonFormat.Parser parser = JsonFormat.parser();
  private final EnvoyAdapter envoy;
  private final Explainer explainer;
  private final RateLimitService service;
  private final Clock clock;

  /**
   * Creates the route explaining with {@code envoy}'s loaded config (null when the adapter is off),
   * writing counter keys as a node with {@code limits} does and asking {@code service} for the
   * counters' current counts, whose reset times are told from {@code clock}.
   */
  ExplainRoute(EnvoyAdapter envoy, InputLimits limits, RateLimitService service, Clock clock) {
    this.envoy = envoy;
    this.explainer = new Explainer(limits);
    this.service = service;
    this.clock = clock;
  }

  /** Returns the route to mount on the HTTP listener. */
  HttpRoute route() {
    return HttpRoute.post(PATH, this::answer);
  }

  /** Returns the answer to {@code call}. */
  CompletableFuture<HttpAnswer> answer(HttpCall call) {
    Request request;
    try {
      request = parse(call);
    } catch (Refused refused) {
      return refused.answer.completed();
    }
    List<RateLimitRequest> counters = new ArrayList<>();
    List<String> plain =
        request.explain(
            explainer,
            policy -> {
              counters.add(policy);
              return Optional.empty();
            });
    if (counters.isEmpty()) {
      return lines(plain).completed();
    }
    return RateLimitService.decideInSlices(service, counters)
        .orTimeout(COUNTS_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS)
        .handle(
            (answers, failure) ->
                lines(
                    answers == null
                        ? uncounted(plain, failure)
                        : request.explain(explainer, counts(answers))));
  }

  private static List<String> uncounted(List<String> lines, Throwable failure) {
    List<String> out = new ArrayList<>(lines);
    out.add("current counts not available: " + failure);
    return out;
  }

  /** A parsed request: the loaded config, the domain and the descriptors. */
  private record Request(EnvoyConfig config, String domain, List<RateLimitDescriptor> descriptors) {
    List<String> explain(
        Explainer explainer, Function<RateLimitRequest, Optional<String>> current) {
      return explainer.explain(config, domain, descriptors, current);
    }
  }

  /**
   * Returns the line of each counter's state, for the counted policies in the order the explainer
   * asks for them (the order {@code answers} were asked in).
   */
  private Function<RateLimitRequest, Optional<String>> counts(List<RateLimitResponse> answers) {
    AtomicInteger next = new AtomicInteger();
    long now = clock.wallMillis();
    return policy -> {
      RateLimitResponse answer = answers.get(next.getAndIncrement());
      if (!answer.error().isEmpty()) {
        return Optional.of("now: error " + answer.error());
      }
      long resetMillis = Math.max(0, answer.resetTime() - now);
      return Optional.of(
          "now: "
              + answer.remaining()
              + " of "
              + answer.limit()
              + " remaining, "
              + answer.status().name()
              + ", resets in "
              + (resetMillis + 999) / 1000
              + " s");
    };
  }

  /** Returns the request {@code call} carries. */
  private Request parse(HttpCall call) throws Refused {
    if (envoy == null) {
      throw new Refused(
          404,
          Status.Code.NOT_FOUND,
          "explain needs the Envoy rate-limit service, which is off on this node: set"
              + " WEIR_ENVOY_CONFIG to a descriptor YAML file or folder");
    }
    Optional<EnvoyConfig> config = envoy.config();
    if (config.isEmpty()) {
      throw new Refused(503, Status.Code.UNAVAILABLE, "no descriptor config is loaded yet");
    }
    if (config.get().domains().isEmpty()) {
      throw new Refused(
          503,
          Status.Code.UNAVAILABLE,
          "no descriptor config is loaded yet: the loaded config declares no domain");
    }
    io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.Builder request =
        io.envoyproxy.envoy.service.ratelimit.v3.RateLimitRequest.newBuilder();
    String body = new String(call.body(), StandardCharsets.UTF_8);
    Optional<String> longNumber = LongNumbers.refusal(body, request.getDescriptorForType());
    Optional<String> refusal =
        longNumber.or(() -> ProtoJsonTypes.refusal(body, request.getDescriptorForType()));
    if (refusal.isPresent()) {
      String shape = refusal.get().startsWith(ParserMessages.MALFORMED) ? BODY_SHAPE : "";
      throw invalid("invalid request body: " + refusal.get() + shape);
    }
    try {
      parser.merge(body, request);
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      throw invalid("invalid request body: " + ParserMessages.of(e) + BODY_SHAPE);
    }
    String domain = request.getDomain();
    if (config.get().domain(domain).isEmpty()) {
      throw invalid(
          "domain is "
              + (domain.isEmpty() ? "empty" : "'" + domain + "'")
              + "; it must be a domain of the loaded config: "
              + String.join(", ", new TreeSet<>(config.get().domains().keySet())));
    }
    if (request.getDescriptorsCount() == 0) {
      throw invalid("descriptors is empty; it must hold at least one descriptor");
    }
    if (RateLimitService.tooManyItems(request.getDescriptorsCount())) {
      throw invalid(
          "descriptors has "
              + request.getDescriptorsCount()
              + " descriptors; at most "
              + RateLimitService.MAX_BATCH_SIZE
              + " are allowed, as many as ShouldRateLimit decides in one call");
    }
    for (int d = 0; d < request.getDescriptorsCount(); d++) {
      RateLimitDescriptor descriptor = request.getDescriptors(d);
      if (descriptor.getEntriesCount() == 0) {
        throw invalid(
            "descriptors[" + d + "].entries is empty; it must hold at least one key and value");
      }
      for (int e = 0; e < descriptor.getEntriesCount(); e++) {
        if (descriptor.getEntries(e).getKey().isEmpty()) {
          throw invalid(
              "descriptors[" + d + "].entries[" + e + "].key is empty; it must be a non-empty key");
        }
      }
    }
    return new Request(config.get(), domain, request.getDescriptorsList());
  }

  private static HttpAnswer lines(List<String> lines) {
    StringBuilder out = new StringBuilder("{\"lines\":[");
    for (int i = 0; i < lines.size(); i++) {
      out.append(i == 0 ? "" : ",").append(HttpAnswer.jsonString(lines.get(i)));
    }
    return HttpAnswer.json(200, out.append("]}").toString());
  }

  private static Refused invalid(String message) {
    return new Refused(400, Status.Code.INVALID_ARGUMENT, message);
  }

  /** A request refused with its error answer. */
  private static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;

    private final transient HttpAnswer answer;

    Refused(int status, Status.Code code, String message) {
      super(message, null, false, false);
      this.answer = HttpAnswer.error(status, code.value(), message);
    }
  }
}
