package dev.weir.envoy.xds;

import com.google.protobuf.Any;
import dev.weir.proto.ratelimit.config.v3.RateLimitConfig;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A state-of-the-world ADS management server for {@value XdsConfigClient#TYPE_URL}, on grpc-java's
 * generated {@code AggregatedDiscoveryService} stubs (java-control-plane's cache serves only
 * Envoy's own resource types): it sends the current set of resources to every stream that
 * subscribes and to every open stream on {@link #push}, each response with its own nonce, and
 * records every request it receives, ACKs and NACKs included.
 */
public final class RateLimitConfigServer
    extends AggregatedDiscoveryServiceGrpc.AggregatedDiscoveryServiceImplBase {

  private final List<DiscoveryRequest> requests = new CopyOnWriteArrayList<>();
  private final List<StreamObserver<DiscoveryResponse>> streams = new ArrayList<>();
  private String version;
  private List<RateLimitConfig> configs;
  private int nonce;

  /** Sets the resources to {@code configs} at {@code version} and sends them to every stream. */
  public synchronized void push(String newVersion, RateLimitConfig... newConfigs) {
    version = newVersion;
    configs = List.of(newConfigs);
    for (StreamObserver<DiscoveryResponse> stream : streams) {
      send(stream);
    }
  }

  /** Returns every request received so far, in order. */
  public List<DiscoveryRequest> requests() {
    return List.copyOf(requests);
  }

  /** Returns the last request received. */
  public DiscoveryRequest lastRequest() {
    List<DiscoveryRequest> all = requests();
    if (all.isEmpty()) {
      throw new IllegalStateException("no request received");
    }
    return all.get(all.size() - 1);
  }

  /** Returns the number of open streams. */
  public synchronized int openStreams() {
    return streams.size();
  }

  /** Fails every open stream with {@code UNAVAILABLE}, as a server going away does. */
  public synchronized void dropStreams() {
    for (StreamObserver<DiscoveryResponse> stream : streams) {
      stream.onError(Status.UNAVAILABLE.withDescription("management server restarting").asException());
    }
    streams.clear();
  }

  @Override
  public StreamObserver<DiscoveryRequest> streamAggregatedResources(
      StreamObserver<DiscoveryResponse> responses) {
    return new StreamObserver<>() {
      @Override
      public void onNext(DiscoveryRequest request) {
        requests.add(request);
        synchronized (RateLimitConfigServer.this) {
          if (request.getResponseNonce().isEmpty()) {
            streams.add(responses);
            if (configs != null) {
              send(responses);
            }
          }
        }
      }

      @Override
      public void onError(Throwable t) {
        remove(responses);
      }

      @Override
      public void onCompleted() {
        remove(responses);
        responses.onCompleted();
      }
    };
  }

  private synchronized void remove(StreamObserver<DiscoveryResponse> stream) {
    streams.remove(stream);
  }

  private void send(StreamObserver<DiscoveryResponse> stream) {
    DiscoveryResponse.Builder response =
        DiscoveryResponse.newBuilder()
            .setTypeUrl(XdsConfigClient.TYPE_URL)
            .setVersionInfo(version)
            .setNonce("nonce-" + ++nonce);
    for (RateLimitConfig config : configs) {
      response.addResources(Any.pack(config, "type.googleapis.com"));
    }
    stream.onNext(response.build());
  }
}
