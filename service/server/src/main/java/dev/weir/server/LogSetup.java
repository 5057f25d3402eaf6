package dev.weir.server;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.OutputStreamAppender;
import ch.qos.logback.core.encoder.Encoder;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import org.slf4j.LoggerFactory;

/**
 * Applies the log settings to Logback at start-up: the root level ({@code WEIR_LOG_LEVEL}) and the
 * line format ({@code WEIR_LOG_FORMAT}: {@code text}, the pattern in {@code logback.xml}, or
 * {@code json}, one JSON object per line from Logback's {@link JsonEncoder}).
 */
final class LogSetup {

  /** {@code WEIR_LOG_FORMAT}, alias {@code GUBER_LOG_FORMAT}: {@code text} or {@code json}. */
  static final EnvVar LOG_FORMAT = EnvVar.of("WEIR_LOG_FORMAT", "GUBER_LOG_FORMAT");

  /** The line formats. */
  enum Format {
    /** Human-readable lines, the pattern of {@code logback.xml}. */
    TEXT,
    /** One JSON object per line. */
    JSON
  }

  private LogSetup() {}

  /** Reads {@code WEIR_LOG_FORMAT}; unset is {@link Format#TEXT}. */
  static Format format(EnvReader env) {
    return Format.valueOf(
        env.oneOf(LOG_FORMAT, "text", List.of("text", "json")).toUpperCase(Locale.ROOT));
  }

  /** Sets the root level to {@code level} and, for JSON, switches every root appender to JSON. */
  static void apply(String level, Format format) {
    if (!(LoggerFactory.getILoggerFactory() instanceof LoggerContext context)) {
      return;
    }
    ch.qos.logback.classic.Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    root.setLevel(Level.toLevel(level, Level.INFO));
    if (format == Format.JSON) {
      for (Iterator<Appender<ILoggingEvent>> it = root.iteratorForAppenders(); it.hasNext(); ) {
        if (it.next() instanceof OutputStreamAppender<ILoggingEvent> appender) {
          appender.stop();
          appender.setEncoder(jsonEncoder(context));
          appender.start();
        }
      }
    }
  }

  /**
   * Returns a started JSON encoder writing timestamp, level, thread, logger, the formatted message,
   * MDC, key-value pairs and throwable of each event, one object per line.
   */
  static Encoder<ILoggingEvent> jsonEncoder(LoggerContext context) {
    JsonEncoder encoder = new JsonEncoder();
    encoder.setContext(context);
    encoder.setWithSequenceNumber(false);
    encoder.setWithNanoseconds(false);
    encoder.setWithContext(false);
    encoder.setWithMessage(false);
    encoder.setWithArguments(false);
    encoder.setWithFormattedMessage(true);
    encoder.start();
    return encoder;
  }
}
