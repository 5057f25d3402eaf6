package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.weir.core.config.ConfigException;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TracingSettingsTest {

  @Test
  void fromReference_enabledAlone_theReferenceDefaults() {
    TracingSettings settings = TracingSettings.fromReference(Map.of("TRACING_ENABLED", "true"));

    assertThat(settings.enabled()).isTrue();
    assertThat(settings.properties())
        .containsEntry("otel.service.name", "RateLimit")
        .containsEntry("otel.exporter.otlp.protocol", "http/protobuf")
        .containsEntry("otel.traces.sampler", "traceidratio")
        .containsEntry("otel.traces.sampler.arg", "1.0")
        .containsEntry("otel.metrics.exporter", "none");
    assertThat(settings.resource()).doesNotContainKey("service.namespace");
    assertThat(UUID.fromString(settings.resource().get("service.instance.id")).version())
        .isEqualTo(4);
  }

  @Test
  void fromReference_everyVariable_honoured() {
    TracingSettings settings =
        TracingSettings.fromReference(
            Map.of(
                "TRACING_ENABLED", "true",
                "TRACING_SERVICE_NAME", "edge",
                "TRACING_SERVICE_NAMESPACE", "prod",
                "TRACING_SERVICE_INSTANCE_ID", "pod-1",
                "TRACING_SAMPLING_RATE", "0.01",
                "TRACING_EXPORTER_PROTOCOL", "grpc",
                "OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317"));

    assertThat(settings.properties())
        .containsEntry("otel.service.name", "edge")
        .containsEntry("otel.exporter.otlp.protocol", "grpc")
        .containsEntry("otel.exporter.otlp.traces.protocol", "grpc")
        .containsEntry("otel.traces.sampler.arg", "0.01")
        .containsEntry("otel.exporter.otlp.endpoint", "http://collector:4317");
    assertThat(settings.resource())
        .containsEntry("service.namespace", "prod")
        .containsEntry("service.instance.id", "pod-1");
  }

  @Test
  void fromReference_badProtocolOrRate_namesTheVariableAndWhatIsAllowed() {
    assertThatThrownBy(
            () ->
                TracingSettings.fromReference(
                    Map.of("TRACING_ENABLED", "true", "TRACING_EXPORTER_PROTOCOL", "udp")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("TRACING_EXPORTER_PROTOCOL")
        .hasMessageContaining("udp")
        .hasMessageContaining("grpc");
    assertThatThrownBy(
            () ->
                TracingSettings.fromReference(
                    Map.of("TRACING_ENABLED", "true", "TRACING_SAMPLING_RATE", "5")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("TRACING_SAMPLING_RATE")
        .hasMessageContaining("0 to 1");
  }

  @Test
  void fromReference_notEnabled_offWhateverOtelSays() {
    assertThat(
            TracingSettings.fromReference(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")))
        .isEqualTo(TracingSettings.OFF);
  }

  @Test
  void fromOtel_onlyWhenAnExporterOrEndpointIsConfigured() {
    assertThat(TracingSettings.fromOtel(Map.of("OTEL_SERVICE_NAME", "x")).enabled()).isFalse();
    assertThat(TracingSettings.fromOtel(Map.of("OTEL_TRACES_EXPORTER", "none")).enabled())
        .isFalse();
    assertThat(TracingSettings.fromOtel(Map.of("OTEL_TRACES_EXPORTER", "otlp")).enabled())
        .isTrue();
    assertThat(
            TracingSettings.fromOtel(
                    Map.of("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/v1/traces"))
                .enabled())
        .isTrue();
  }

  @Test
  void fromOtel_standardVariables_becomeTheirProperties_serviceNamedWeirByDefault() {
    TracingSettings settings =
        TracingSettings.fromOtel(
            Map.of(
                "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317",
                "OTEL_TRACES_SAMPLER", "parentbased_traceidratio",
                "OTEL_TRACES_SAMPLER_ARG", "0.01"));

    assertThat(settings.properties())
        .containsEntry("otel.exporter.otlp.endpoint", "http://c:4317")
        .containsEntry("otel.traces.sampler", "parentbased_traceidratio")
        .containsEntry("otel.traces.sampler.arg", "0.01")
        .containsEntry("otel.service.name", "weir")
        .containsEntry("otel.logs.exporter", "none");
  }

  @Test
  void fromOtel_noProtocolSet_theSdkIsToldHttpProtobufNotItsGrpcDefault() {
    TracingSettings settings =
        TracingSettings.fromOtel(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"));

    assertThat(NodeTracing.properties(settings))
        .containsEntry("otel.exporter.otlp.protocol", "http/protobuf")
        .doesNotContainKey("otel.exporter.otlp.traces.protocol");
    assertThat(settings.describe()).isEqualTo("otlp http/protobuf to http://c:4318");
  }

  @Test
  void spanAttributeValues_boundedAt1024CharsInBothModesUnlessALimitIsGiven() {
    String key = "otel.span.attribute.value.length.limit";
    assertThat(
            TracingSettings.fromOtel(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"))
                .properties())
        .containsEntry(key, "1024");
    assertThat(TracingSettings.fromReference(Map.of("TRACING_ENABLED", "true")).properties())
        .containsEntry(key, "1024");
    assertThat(
            TracingSettings.fromOtel(
                    Map.of(
                        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318",
                        "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "4096"))
                .properties())
        .containsEntry(key, "4096");
    assertThat(
            TracingSettings.fromOtel(
                    Map.of(
                        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318",
                        "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "64"))
                .properties())
        .containsEntry("otel.attribute.value.length.limit", "64")
        .doesNotContainKey(key);
  }

  @Test
  void fromOtel_protocolSet_keptAsGiven() {
    assertThat(
            TracingSettings.fromOtel(
                    Map.of(
                        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317",
                        "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"))
                .properties())
        .containsEntry("otel.exporter.otlp.protocol", "grpc");
    assertThat(
            TracingSettings.fromOtel(
                    Map.of(
                        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317",
                        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"))
                .describe())
        .isEqualTo("otlp grpc to http://c:4317");
  }

  @Test
  void start_valueTheSdkRefuses_configExceptionNamingTheVariableAndValue() {
    TracingSettings settings =
        TracingSettings.fromOtel(
            Map.of(
                "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318",
                "OTEL_TRACES_SAMPLER", "traceidratio",
                "OTEL_TRACES_SAMPLER_ARG", "half"));

    assertThatThrownBy(() -> NodeTracing.start(settings).close())
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("OTEL_TRACES_SAMPLER_ARG='half' is not valid: ")
        .hasMessageNotContaining("\n");
  }

  @Test
  void check_exporterListWithEmptyItems_acceptedAsTheSdkDropsThem() {
    for (String exporters : List.of("otlp,", "otlp, ,", ",otlp")) {
      TracingSettings settings =
          TracingSettings.fromOtel(Map.of("OTEL_TRACES_EXPORTER", exporters));

      assertThat(settings.enabled()).as(exporters).isTrue();
      settings.check();
    }
  }

  @Test
  void fromOtel_noneWithEmptyItems_offAsNoneIs() {
    assertThat(TracingSettings.fromOtel(Map.of("OTEL_TRACES_EXPORTER", "none,")))
        .isEqualTo(TracingSettings.OFF);
  }

  @Test
  void check_unknownExporterBesideEmptyItems_stillNamesTheVariableAndWhatIsAllowed() {
    assertThatThrownBy(
            () -> TracingSettings.fromOtel(Map.of("OTEL_TRACES_EXPORTER", "otlp,,zipkin")).check())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("OTEL_TRACES_EXPORTER")
        .hasMessageContaining("otlp,,zipkin")
        .hasMessageContaining("otlp or none");
  }

  @Test
  void check_generalProtocolReplacedByTheTracesOne_notChecked() {
    TracingSettings.fromOtel(
            Map.of(
                "OTEL_TRACES_EXPORTER", "otlp",
                "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"))
        .check();
  }

  @Test
  void check_generalEndpointReplacedByTheTracesOne_notChecked() {
    TracingSettings.fromOtel(
            Map.of(
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf",
                "OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/v1/traces"))
        .check();
  }

  @Test
  void check_generalProtocolOrEndpointAlone_stillChecked() {
    assertThatThrownBy(
            () ->
                TracingSettings.fromOtel(
                        Map.of(
                            "OTEL_TRACES_EXPORTER", "otlp",
                            "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"))
                    .check())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("OTEL_EXPORTER_OTLP_PROTOCOL")
        .hasMessageContaining("http/json")
        .hasMessageContaining("grpc or http/protobuf");
    assertThatThrownBy(
            () ->
                TracingSettings.fromOtel(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317"))
                    .check())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("OTEL_EXPORTER_OTLP_ENDPOINT")
        .hasMessageContaining("collector:4317")
        .hasMessageContaining("http://");
  }

  @Test
  void check_negativeValueLengthLimit_namesTheVariableTheValueAndWhatIsAllowed() {
    for (String variable :
        List.of("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")) {
      for (String value : List.of("-1", "1.5", "lots")) {
        assertThatThrownBy(
                () ->
                    TracingSettings.fromOtel(
                            Map.of("OTEL_TRACES_EXPORTER", "otlp", variable, value))
                        .check())
            .as(variable + "=" + value)
            .isInstanceOf(ConfigException.class)
            .hasMessageContaining(variable)
            .hasMessageContaining(value)
            .hasMessageContaining("a whole number, 0 or more");
      }
    }
  }

  @Test
  void check_valueLengthLimitsOfZeroOrMore_accepted() {
    for (String value : List.of("0", "256")) {
      TracingSettings.fromOtel(
              Map.of(
                  "OTEL_TRACES_EXPORTER", "otlp",
                  "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", value,
                  "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", value))
          .check();
    }
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT | -1 | a whole number, 0 or more",
        "OTEL_ATTRIBUTE_COUNT_LIMIT | -1 | a whole number, 0 or more",
        "OTEL_SPAN_EVENT_COUNT_LIMIT | -1 | a whole number, 0 or more",
        "OTEL_SPAN_LINK_COUNT_LIMIT | -1 | a whole number, 0 or more",
        "OTEL_SPAN_LINK_COUNT_LIMIT | many | a whole number, 0 or more",
        "OTEL_BSP_MAX_QUEUE_SIZE | 0 | a whole number, 1 or more",
        "OTEL_BSP_MAX_QUEUE_SIZE | -5 | a whole number, 1 or more",
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE | 0 | a whole number, 1 or more",
        "OTEL_BSP_SCHEDULE_DELAY | -1 | a duration, 0 or more",
        "OTEL_BSP_SCHEDULE_DELAY | -5s | a duration, 0 or more",
        "OTEL_BSP_EXPORT_TIMEOUT | -30000 | a duration, 0 or more",
        "OTEL_BSP_EXPORT_TIMEOUT | 1.5s | a duration, 0 or more"
      })
  void start_limitOrBatchSettingOutOfRange_namesTheVariableTheValueAndWhatIsAllowed(
      String variable, String value, String allowed) {
    TracingSettings settings =
        TracingSettings.fromOtel(
            Map.of("OTEL_TRACES_EXPORTER", "otlp", variable, value));

    assertThatThrownBy(() -> NodeTracing.start(settings).close())
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith(variable + "='" + value + "' is not valid")
        .hasMessageContaining(allowed);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT | -1",
        "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT | -1",
        "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT | 128",
        "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT | 0"
      })
  void start_limitTheJavaSdkDoesNotRead_acceptedAsTheSdkAcceptsIt(String variable, String value) {
    TracingSettings settings =
        TracingSettings.fromOtel(
            Map.of(
                "OTEL_TRACES_EXPORTER", "otlp",
                "OTEL_BSP_SCHEDULE_DELAY", "1h",
                variable, value));

    NodeTracing.start(settings).close();
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT | 0",
        "OTEL_BSP_MAX_QUEUE_SIZE | 1",
        "OTEL_BSP_SCHEDULE_DELAY | 0",
        "OTEL_BSP_SCHEDULE_DELAY | 5000",
        "OTEL_BSP_EXPORT_TIMEOUT | 30s",
        "OTEL_BSP_EXPORT_TIMEOUT | 250 ms"
      })
  void check_limitOrBatchSettingInRange_accepted(String variable, String value) {
    TracingSettings.fromOtel(Map.of("OTEL_TRACES_EXPORTER", "otlp", variable, value)).check();
  }

  @Test
  void refused_illegalArgumentOfTheSdk_givesItsMessage() {
    ConfigException refused =
        NodeTracing.refused(
            new IllegalArgumentException("maxQueueSize must be positive."),
            Map.of("otel.bsp.max.queue.size", "0"));

    assertThat(refused)
        .hasMessage("the OTEL_* tracing settings are not valid: maxQueueSize must be positive.");
  }
}
