package dev.weir.tls;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.netty.shaded.io.netty.buffer.ByteBufAllocator;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslProvider;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class TrustScopedSslContextTest {

  @Test
  void newEngine_rebuildFails_servesThePreviousContextWarnsAndRetriesOnTheNextEngine()
      throws Exception {
    int[] calls = {0};
    AtomicLong generation = new AtomicLong(1);
    TrustScopedSslContext context =
        TrustScopedSslContext.of(
            () -> {
              calls[0]++;
              if (calls[0] == 2) {
                throw new SSLException("no key manager");
              }
              return SslContextBuilder.forClient()
                  .sslProvider(SslProvider.JDK)
                  .protocols(calls[0] == 1 ? "TLSv1.2" : "TLSv1.3")
                  .build();
            },
            generation::get);
    generation.incrementAndGet();
    Logger logger = (Logger) LoggerFactory.getLogger(TrustScoped.class);
    ListAppender<ILoggingEvent> logged = new ListAppender<>();
    logged.start();
    logger.addAppender(logged);
    SSLEngine afterFailure;
    try {
      afterFailure = context.newEngine(ByteBufAllocator.DEFAULT);
    } finally {
      logger.detachAppender(logged);
    }
    SSLEngine afterRetry = context.newEngine(ByteBufAllocator.DEFAULT);

    assertThat(afterFailure.getEnabledProtocols()).containsExactly("TLSv1.2");
    assertThat(afterRetry.getEnabledProtocols()).containsExactly("TLSv1.3");
    assertThat(calls[0]).isEqualTo(3);
    assertThat(logged.list)
        .filteredOn(e -> e.getLevel() == Level.WARN)
        .extracting(ILoggingEvent::getFormattedMessage)
        .singleElement()
        .asString()
        .contains("no key manager");
  }
}
