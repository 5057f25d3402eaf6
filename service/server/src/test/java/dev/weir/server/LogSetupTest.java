package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.classic.spi.LoggingEvent;
import com.google.protobuf.Struct;
import com.google.protobuf.util.JsonFormat;
import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class LogSetupTest {

  @Test
  void logbackXml_discoveryLibrariesRetryWarningsOff_weirDiscoveryWarningsOn() throws Exception {
    LoggerContext context = new LoggerContext();
    JoranConfigurator configurator = new JoranConfigurator();
    configurator.setContext(context);
    configurator.doConfigure(LogSetupTest.class.getResource("/logback.xml"));

    assertThat(context.getLogger("io.fabric8.kubernetes.client.informers.impl.cache.Reflector").isWarnEnabled())
        .isFalse();
    assertThat(context.getLogger("io.etcd.jetcd.impl.LeaseImpl").isWarnEnabled()).isFalse();
    assertThat(context.getLogger("io.etcd.jetcd.impl.LeaseImpl").isErrorEnabled()).isTrue();
    assertThat(context.getLogger("dev.weir.discovery.etcd.EtcdDiscovery").isWarnEnabled()).isTrue();
    context.stop();
  }

  @Test
  void format_unset_text() {
    assertThat(LogSetup.format(new EnvReader(Map.of()))).isEqualTo(LogSetup.Format.TEXT);
  }

  @Test
  void format_guberAliasJson_json() {
    assertThat(LogSetup.format(new EnvReader(Map.of("GUBER_LOG_FORMAT", "JSON"))))
        .isEqualTo(LogSetup.Format.JSON);
  }

  @Test
  void format_unknown_errorNamesVariableAndChoices() {
    assertThatThrownBy(() -> LogSetup.format(new EnvReader(Map.of("WEIR_LOG_FORMAT", "xml"))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("WEIR_LOG_FORMAT")
        .hasMessageContaining("xml")
        .hasMessageContaining("text, json");
  }

  @Test
  void jsonEncoder_event_oneJsonObjectLineWithFormattedMessage() throws Exception {
    LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
    Logger logger = context.getLogger("dev.weir.Test");
    LoggingEvent event =
        new LoggingEvent(
            "fqcn", logger, Level.WARN, "peer {} failed", new IllegalStateException("boom"),
            new Object[] {"10.0.0.2:1051"});

    String line =
        new String(LogSetup.jsonEncoder(context).encode(event), StandardCharsets.UTF_8);

    assertThat(line).endsWith("\n").doesNotContain("\n{");
    Struct.Builder json = Struct.newBuilder();
    JsonFormat.parser().merge(line.trim(), json);
    assertThat(json.getFieldsOrThrow("level").getStringValue()).isEqualTo("WARN");
    assertThat(json.getFieldsOrThrow("loggerName").getStringValue()).isEqualTo("dev.weir.Test");
    assertThat(json.getFieldsOrThrow("formattedMessage").getStringValue())
        .isEqualTo("peer 10.0.0.2:1051 failed");
    assertThat(json.getFieldsOrThrow("throwable").getStructValue().getFieldsOrThrow("message")
            .getStringValue())
        .isEqualTo("boom");
  }
}
