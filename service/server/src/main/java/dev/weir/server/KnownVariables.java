package dev.weir.server;

import dev.weir.core.cluster.ClusterSettings;
import dev.weir.core.cluster.snapshot.SnapshotDirectory;
import dev.weir.core.cluster.peer.auth.PeerSettings;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.WeirConfig;
import dev.weir.core.discovery.DiscoveryEnv;
import dev.weir.core.limiter.InputLimits;
import dev.weir.envoy.EnvoySettings;
import dev.weir.envoy.rlqs.RlqsSettings;
import dev.weir.envoy.xds.XdsSettings;
import dev.weir.http.HttpSettings;
import dev.weir.tls.TlsSettings;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Every environment variable {@code weir.jar} reads, as the server assembles them from the modules
 * it is built of: the {@code static final EnvVar} constants of {@link #DECLARING_CLASSES} and the
 * discovery variables ({@link DiscoverySettings#VARIABLES}, each with its {@code GUBER_} alias). A
 * class that declares a new {@code EnvVar} belongs in {@link #DECLARING_CLASSES}.
 */
public final class KnownVariables {

  /** The classes whose {@code static final EnvVar} fields are settings. */
  static final List<Class<?>> DECLARING_CLASSES =
      List.of(
          WeirConfig.class,
          ClusterSettings.class,
          PeerSettings.class,
          HttpSettings.class,
          InputLimits.class,
          TlsSettings.class,
          EnvoySettings.class,
          RlqsSettings.class,
          XdsSettings.class,
          OpsSettings.class,
          LogSetup.class,
          AutoCaFile.class,
          NodeWarmUp.class,
          TopLimitedSettings.class,
          SnapshotDirectory.class);

  private static final List<EnvVar> ALL = collect();

  private KnownVariables() {}

  /** Returns every variable, each once, in the order the classes declare them. */
  public static List<EnvVar> all() {
    return ALL;
  }

  private static List<EnvVar> collect() {
    Set<EnvVar> variables = new LinkedHashSet<>();
    for (Class<?> type : DECLARING_CLASSES) {
      for (Field field : type.getDeclaredFields()) {
        int modifiers = field.getModifiers();
        if (field.getType() == EnvVar.class
            && Modifier.isStatic(modifiers)
            && Modifier.isFinal(modifiers)) {
          variables.add(read(field));
        }
      }
    }
    for (String name : DiscoverySettings.VARIABLES) {
      variables.add(DiscoveryEnv.var(name.substring("WEIR_".length())));
    }
    return List.copyOf(new ArrayList<>(variables));
  }

  private static EnvVar read(Field field) {
    try {
      field.setAccessible(true);
      return (EnvVar) field.get(null);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("cannot read the setting " + field, e);
    }
  }
}
