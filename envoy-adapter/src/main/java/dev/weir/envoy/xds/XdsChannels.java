package dev.weir.envoy.xds;

import dev.weir.core.config.ConfigException;
import dev.weir.tls.Pem;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.stub.MetadataUtils;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.util.Locale;
import java.util.function.Supplier;

/** Opens the gRPC channel to the xDS management server that {@link XdsSettings} describe. */
public final class XdsChannels {

  private XdsChannels() {}

  /**
   * Returns a channel to {@code settings.serverAddress()}, as each channel {@link #factory} makes.
   *
   * @throws ConfigException when a TLS file cannot be read or used, naming the variables that set
   *     the files, the file and the reason
   */
  public static ManagedChannel open(XdsSettings settings) {
    return factory(settings).get();
  }

  /**
   * Returns a maker of channels to {@code settings.serverAddress()}, each new: TLS when asked
   * (presenting the client certificate when one is given, trusting the given CAs or else the
   * JVM's, checking the server certificate for {@code serverName} when given), the additional
   * headers on every call (one whose name ends in {@code -bin} as a binary header of the value's
   * UTF-8 bytes, base64 on the wire, as grpc-go sends it), and the largest response allowed. The
   * TLS files are read now, once.
   *
   * @throws ConfigException when a TLS file cannot be read or used, naming the variables that set
   *     the files, the file and the reason
   */
  public static Supplier<ManagedChannel> factory(XdsSettings settings) {
    SslContext tls = null;
    if (settings.useTls()) {
      try {
        tls = sslContext(settings);
      } catch (IOException e) {
        throw new ConfigException(
            "the TLS files set by "
                + settings.tlsFileVariables()
                + " cannot be used: "
                + e.getMessage());
      }
    }
    SslContext context = tls;
    return () -> build(settings, context);
  }

  private static ManagedChannel build(XdsSettings settings, SslContext tls) {
    NettyChannelBuilder builder =
        NettyChannelBuilder.forAddress(
                settings.serverAddress().host(), settings.serverAddress().port())
            .maxInboundMessageSize(settings.maxMessageBytes());
    if (tls != null) {
      builder.sslContext(tls).useTransportSecurity();
      settings.serverName().ifPresent(builder::overrideAuthority);
    } else {
      builder.usePlaintext();
    }
    if (!settings.headers().isEmpty()) {
      Metadata headers = new Metadata();
      settings
          .headers()
          .forEach(
              (k, v) -> {
                // lowered first, as grpc-go's metadata.New does: Key.of checks the suffix before
                // it lowers the name, so X-Token-Bin would be refused
                String name = k.toLowerCase(Locale.ROOT);
                if (name.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
                  headers.put(
                      Metadata.Key.of(name, Metadata.BINARY_BYTE_MARSHALLER),
                      v.getBytes(StandardCharsets.UTF_8));
                } else {
                  headers.put(Metadata.Key.of(k, Metadata.ASCII_STRING_MARSHALLER), v);
                }
              });
      builder.intercept(MetadataUtils.newAttachHeadersInterceptor(headers));
    }
    return builder.build();
  }

  /**
   * Returns the client TLS context {@code settings} describe: the client certificate and key when
   * given, the given CAs or else the JVM's. A file that cannot be read or used throws, naming it.
   */
  private static SslContext sslContext(XdsSettings settings) throws IOException {
    SslContextBuilder tls = GrpcSslContexts.forClient();
    if (settings.clientCert().isPresent()) {
      X509Certificate[] chain = Pem.certificates(settings.clientCert().get());
      tls.keyManager(Pem.privateKey(settings.clientKey().orElseThrow()), chain);
    }
    if (settings.caCert().isPresent()) {
      tls.trustManager(Pem.certificates(settings.caCert().get()));
    }
    return tls.build();
  }
}
