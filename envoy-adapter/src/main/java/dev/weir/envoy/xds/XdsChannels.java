package dev.weir.envoy.xds;

import dev.weir.tls.Pem;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.stub.MetadataUtils;
import java.io.IOException;
import java.security.cert.X509Certificate;

/** Opens the gRPC channel to the xDS management server that {@link XdsSettings} describe. */
public final class XdsChannels {

  private XdsChannels() {}

  /**
   * Returns a channel to {@code settings.serverAddress()}: TLS when asked (presenting the client
   * certificate when one is given, trusting the given CAs or else the JVM's, checking the server
   * certificate for {@code serverName} when given), the additional headers on every call, and the
   * largest response allowed. An unreadable certificate or key throws, naming the file.
   */
  public static ManagedChannel open(XdsSettings settings) throws IOException {
    NettyChannelBuilder builder =
        NettyChannelBuilder.forAddress(
                settings.serverAddress().host(), settings.serverAddress().port())
            .maxInboundMessageSize(settings.maxMessageBytes());
    if (settings.useTls()) {
      SslContextBuilder tls = GrpcSslContexts.forClient();
      if (settings.clientCert().isPresent()) {
        X509Certificate[] chain = Pem.certificates(settings.clientCert().get());
        tls.keyManager(Pem.privateKey(settings.clientKey().orElseThrow()), chain);
      }
      if (settings.caCert().isPresent()) {
        tls.trustManager(Pem.certificates(settings.caCert().get()));
      }
      builder.sslContext(tls.build()).useTransportSecurity();
      settings.serverName().ifPresent(builder::overrideAuthority);
    } else {
      builder.usePlaintext();
    }
    if (!settings.headers().isEmpty()) {
      Metadata headers = new Metadata();
      settings
          .headers()
          .forEach(
              (k, v) -> headers.put(Metadata.Key.of(k, Metadata.ASCII_STRING_MARSHALLER), v));
      builder.intercept(MetadataUtils.newAttachHeadersInterceptor(headers));
    }
    return builder.build();
  }
}
