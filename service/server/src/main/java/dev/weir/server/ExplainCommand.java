package dev.weir.server;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.HostPort;
import dev.weir.core.limiter.InputLimits;
import dev.weir.core.model.RateLimitRequest;
import dev.weir.core.time.Clock;
import dev.weir.core.time.SystemClock;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.config.ConfigLoader;
import dev.weir.envoy.config.DescriptorConfigException;
import dev.weir.envoy.config.EnvoyConfig;
import dev.weir.envoy.config.Units;
import dev.weir.envoy.match.Entry;
import dev.weir.envoy.service.Explainer;
import dev.weir.proto.gubernator.GetRateLimitsReq;
import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.V1Grpc;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.type.v3.RateLimitUnit;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * {@code explain [--node HOST:PORT] CONFIG DOMAIN [--limit N/UNIT] DESCRIPTOR...}: prints how the
 * descriptor config at {@code CONFIG} answers one {@code ShouldRateLimit} call of {@code DOMAIN}
 * with the given descriptors, a {@code --limit} giving the next one Envoy's limit override (see
 * {@link Explainer}); with {@code --node}, also each counter's current state on
 * that running node (plaintext gRPC, checked with 0 hits). Exits 0 when the config loads, 1 with its
 * load errors, 2 on a usage error.
 */
final class ExplainCommand implements Command {

  private final Clock clock;

  /** Creates the command, reading the time to a counter's reset from the system clock. */
  ExplainCommand() {
    this(SystemClock.INSTANCE);
  }

  /** Creates the command, reading the time to a counter's reset from {@code clock}. */
  ExplainCommand(Clock clock) {
    this.clock = clock;
  }

  /**
   * The units a {@code --limit} takes, by their name on the command line, in size order: those a
   * limit override may carry ({@link Units#fromOverride}).
   */
  private static final Map<String, RateLimitUnit> LIMIT_UNITS = limitUnits();

  /** The usage on one line, as a usage error names it after another subcommand. */
  static final String USAGE_LINE =
      "usage: java -jar weir.jar explain [--node HOST:PORT] CONFIG DOMAIN [--limit N/UNIT]"
          + " DESCRIPTOR...";

  /** The usage and the arguments, printed first by {@code --help} and alone on a usage error. */
  static final String USAGE =
      """
      usage: java -jar weir.jar explain [--node HOST:PORT] CONFIG DOMAIN [--limit N/UNIT]
                                        DESCRIPTOR...
        CONFIG      a descriptor YAML file or folder, loaded as WEIR_ENVOY_CONFIG is
        DOMAIN      the domain Envoy sends
        DESCRIPTOR  one Envoy descriptor: key=value[,key=value...]; write \\, and \\= for a comma or an
                    equals sign inside a value
        --limit     gives the DESCRIPTOR after it Envoy's limit override, N requests per UNIT
                    (second, minute, hour, day, month or year), as Envoy sends it
        --node      also ask that node's gRPC port (plaintext) for each counter's remaining count\
      """;

  private static Map<String, RateLimitUnit> limitUnits() {
    Map<String, RateLimitUnit> units = new LinkedHashMap<>();
    for (RateLimitUnit unit : RateLimitUnit.values()) {
      if (unit != RateLimitUnit.UNRECOGNIZED && Units.fromOverride(unit).isPresent()) {
        units.put(unit.name().toLowerCase(Locale.ROOT), unit);
      }
    }
    return Collections.unmodifiableMap(units);
  }

  @Override
  public String summary() {
    return "show which rule an Envoy descriptor matches, and its counter";
  }

  @Override
  public String usage() {
    return USAGE_LINE;
  }

  @Override
  public String help() {
    return USAGE
        + """


        Prints, for each descriptor, the rule it matches in CONFIG (file and line), or where
        matching stopped and the candidates there, or its limit override, then its counter key and
        policies.

        Exit status: 0 when CONFIG loads, 1 with its load errors, 2 for a usage error.\
        """;
  }

  @Override
  public int run(List<String> args, Map<String, String> env, PrintStream out, PrintStream err) {
    List<String> rest = new ArrayList<>(args);
    String node = null;
    if (!rest.isEmpty() && rest.get(0).equals("--node")) {
      if (rest.size() < 2) {
        err.println(USAGE);
        return 2;
      }
      node = rest.get(1);
      rest = rest.subList(2, rest.size());
    }
    if (rest.size() < 3) {
      err.println(USAGE);
      return 2;
    }
    HostPort target = null;
    if (node != null) {
      try {
        target = HostPort.parseLocalGrpcTarget(node);
      } catch (IllegalArgumentException e) {
        err.println("--node must be HOST:PORT, got '" + node + "': " + e.getMessage());
        return 2;
      }
    }
    List<RateLimitDescriptor> descriptors;
    try {
      descriptors = parseDescriptors(rest.subList(2, rest.size()));
    } catch (IllegalArgumentException e) {
      err.println(e.getMessage());
      err.println(USAGE);
      return 2;
    }
    EnvoySettings settings;
    InputLimits limits;
    try {
      settings = EnvoySettings.from(new EnvReader(env));
      limits = InputLimits.from(new EnvReader(env));
    } catch (ConfigException e) {
      err.println(e.getMessage());
      return 2;
    }
    EnvoyConfig config;
    try {
      config = new ConfigLoader(settings.loadOptions()).load(Path.of(rest.get(0)));
    } catch (DescriptorConfigException e) {
      e.errors().forEach(err::println);
      return 1;
    }
    Explainer explainer = new Explainer(limits);
    if (target == null) {
      explainer
          .explain(config, rest.get(1), descriptors, r -> Optional.empty())
          .forEach(out::println);
      return 0;
    }
    ManagedChannel channel =
        NettyChannelBuilder.forAddress(target.host(), target.port()).usePlaintext().build();
    try {
      V1Grpc.V1BlockingStub stub = V1Grpc.newBlockingStub(channel);
      explainer
          .explain(config, rest.get(1), descriptors, current(stub, node))
          .forEach(out::println);
      return 0;
    } finally {
      channel.shutdownNow();
    }
  }

  /**
   * Returns the line describing a counter's state on the node behind {@code stub}: remaining and
   * time to reset, or the error that asking it gave.
   */
  private Function<RateLimitRequest, Optional<String>> current(
      V1Grpc.V1BlockingStub stub, String node) {
    return request -> {
      RateLimitReq item =
          RateLimitReq.newBuilder()
              .setName(request.name())
              .setUniqueKey(request.uniqueKey())
              .setHits(0)
              .setLimit(request.limit())
              .setDuration(request.duration())
              .setAlgorithmValue(request.algorithm())
              .setBehaviorValue(request.behavior())
              .setBurst(request.burst())
              .putAllMetadata(request.metadata())
              .build();
      try {
        RateLimitResp answer =
            stub.withDeadlineAfter(5, TimeUnit.SECONDS)
                .getRateLimits(GetRateLimitsReq.newBuilder().addRequests(item).build())
                .getResponses(0);
        if (!answer.getError().isEmpty()) {
          return Optional.of("on " + node + ": error " + answer.getError());
        }
        long resetMillis = Math.max(0, answer.getResetTime() - clock.wallMillis());
        return Optional.of(
            "on "
                + node
                + ": "
                + answer.getRemaining()
                + " of "
                + answer.getLimit()
                + " remaining, "
                + answer.getStatus().name()
                + ", resets in "
                + (resetMillis + 999) / 1000
                + " s");
      } catch (StatusRuntimeException e) {
        return Optional.of("on " + node + ": could not ask: " + e.getStatus());
      }
    };
  }

  /**
   * Returns the descriptors of {@code args}, each a {@code DESCRIPTOR} optionally preceded by
   * {@code --limit N/UNIT}, its limit override.
   *
   * @throws IllegalArgumentException naming the argument when a descriptor or a limit is malformed
   *     or a {@code --limit} has no descriptor after it
   */
  static List<RateLimitDescriptor> parseDescriptors(List<String> args) {
    List<RateLimitDescriptor> out = new ArrayList<>();
    for (int i = 0; i < args.size(); i++) {
      RateLimitDescriptor.Builder descriptor = RateLimitDescriptor.newBuilder();
      if (args.get(i).equals("--limit")) {
        if (i + 2 >= args.size()) {
          throw new IllegalArgumentException(
              (i + 1 < args.size() ? "--limit " + args.get(i + 1) : "--limit N/UNIT")
                  + " must be followed by the DESCRIPTOR it applies to");
        }
        descriptor.setLimit(parseLimit(args.get(i + 1)));
        i += 2;
      }
      for (Entry entry : parseDescriptor(args.get(i))) {
        descriptor.addEntries(
            RateLimitDescriptor.Entry.newBuilder().setKey(entry.key()).setValue(entry.value()));
      }
      out.add(descriptor.build());
    }
    return out;
  }

  /**
   * Returns the limit override {@code text}, {@code N/UNIT}: N requests per UNIT, one of Envoy's
   * override units.
   *
   * @throws IllegalArgumentException naming the value and what is allowed when it is not that
   */
  static RateLimitDescriptor.RateLimitOverride parseLimit(String text) {
    int slash = text.indexOf('/');
    RateLimitUnit unit =
        slash < 0 ? null : LIMIT_UNITS.get(text.substring(slash + 1).toLowerCase(Locale.ROOT));
    Integer requests = null;
    if (unit != null) {
      try {
        requests = Integer.parseUnsignedInt(text.substring(0, slash));
      } catch (NumberFormatException e) {
        requests = null;
      }
    }
    if (requests == null) {
      throw new IllegalArgumentException(
          "--limit is '"
              + text
              + "'; it must be N/UNIT, N a whole number from 0 to 4294967295 and"
              + " UNIT one of "
              + String.join(", ", LIMIT_UNITS.keySet()));
    }
    return RateLimitDescriptor.RateLimitOverride.newBuilder()
        .setRequestsPerUnit(requests)
        .setUnit(unit)
        .build();
  }

  /**
   * Returns the entries of {@code text}, {@code key=value[,key=value...]} with {@code \,} and
   * {@code \=} escaping a comma or equals sign.
   *
   * @throws IllegalArgumentException naming the descriptor when an entry has no {@code =} or an
   *     empty key
   */
  static List<Entry> parseDescriptor(String text) {
    List<Entry> entries = new ArrayList<>();
    StringBuilder key = new StringBuilder();
    StringBuilder value = new StringBuilder();
    StringBuilder current = key;
    boolean sawEquals = false;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '\\' && i + 1 < text.length()) {
        current.append(text.charAt(++i));
      } else if (c == '=' && !sawEquals) {
        sawEquals = true;
        current = value;
      } else if (c == ',') {
        entries.add(entry(text, key, value, sawEquals));
        key.setLength(0);
        value.setLength(0);
        current = key;
        sawEquals = false;
      } else {
        current.append(c);
      }
    }
    entries.add(entry(text, key, value, sawEquals));
    return entries;
  }

  private static Entry entry(String text, StringBuilder key, StringBuilder value, boolean equals) {
    if (!equals || key.length() == 0) {
      throw new IllegalArgumentException(
          "descriptor '" + text + "': every entry must be key=value with a non-empty key");
    }
    return new Entry(key.toString(), value.toString());
  }
}
