package dev.weir.helm;

import dev.weir.helm.Chart.Document;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The objects one rendering of the chart produced. */
public record Rendered(List<Document> documents) {

  /** Returns the typed objects. */
  public List<HasMetadata> objects() {
    return documents.stream().map(Document::object).toList();
  }

  /** Returns every object of {@code type}. */
  public <T extends HasMetadata> List<T> all(Class<T> type) {
    return objects().stream().filter(type::isInstance).map(type::cast).toList();
  }

  /** Returns the one object of {@code type}; fails unless there is exactly one. */
  public <T extends HasMetadata> T only(Class<T> type) {
    List<T> found = all(type);
    if (found.size() != 1) {
      throw new AssertionError("expected one " + type.getSimpleName() + ", found " + found.size());
    }
    return found.get(0);
  }

  /** Returns the Deployment. */
  public Deployment deployment() {
    return only(Deployment.class);
  }

  /** Returns the Weir container of the Deployment. */
  public Container weir() {
    return deployment().getSpec().getTemplate().getSpec().getContainers().get(0);
  }

  /** Returns the {@code helm test} pod. */
  public Pod testPod() {
    return only(Pod.class);
  }

  /**
   * Returns the Weir container's environment by name: a value, or {@code fieldRef:PATH}, {@code
   * secretKeyRef:NAME/KEY} or {@code configMapKeyRef:NAME/KEY} for a reference.
   */
  public Map<String, String> env() {
    Map<String, String> env = new LinkedHashMap<>();
    for (EnvVar e : weir().getEnv()) {
      env.put(e.getName(), describe(e));
    }
    return env;
  }

  /** Describes an environment variable's value as {@link #env()} does. */
  public static String describe(EnvVar e) {
    if (e.getValueFrom() == null) {
      return e.getValue();
    }
    var from = e.getValueFrom();
    if (from.getFieldRef() != null) {
      return "fieldRef:" + from.getFieldRef().getFieldPath();
    }
    if (from.getSecretKeyRef() != null) {
      return "secretKeyRef:"
          + from.getSecretKeyRef().getName()
          + "/"
          + from.getSecretKeyRef().getKey();
    }
    if (from.getConfigMapKeyRef() != null) {
      return "configMapKeyRef:"
          + from.getConfigMapKeyRef().getName()
          + "/"
          + from.getConfigMapKeyRef().getKey();
    }
    return from.toString();
  }
}
