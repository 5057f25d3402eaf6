package dev.weir.helm;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * The fields of a parsed Kubernetes object that fabric8's typed model did not recognise, such as a
 * misspelled field of a rendered chart template or a manifest (fabric8 keeps them in {@code
 * additionalProperties} instead of failing).
 */
public final class UnknownFields {

  private UnknownFields() {}

  /**
   * Returns the paths of fields fabric8's typed model did not recognise (kept in {@code
   * additionalProperties}) anywhere in {@code object}.
   */
  public static List<String> in(Object object) {
    List<String> unknown = new ArrayList<>();
    walk(object, object.getClass().getSimpleName(), unknown);
    return unknown;
  }

  private static void walk(Object o, String path, List<String> unknown) {
    if (o == null) {
      return;
    }
    if (o instanceof Collection<?> c) {
      int i = 0;
      for (Object item : c) {
        walk(item, path + "[" + i++ + "]", unknown);
      }
      return;
    }
    if (o instanceof Map<?, ?> m) {
      m.forEach((k, v) -> walk(v, path + "." + k, unknown));
      return;
    }
    if (!o.getClass().getName().startsWith("io.fabric8.") || o.getClass().isEnum()) {
      return;
    }
    for (Method getter : o.getClass().getMethods()) {
      if (getter.getParameterCount() != 0
          || !getter.getName().startsWith("get")
          || getter.getDeclaringClass() == Object.class) {
        continue;
      }
      Object value;
      try {
        value = getter.invoke(o);
      } catch (IllegalAccessException | InvocationTargetException e) {
        continue;
      }
      if (getter.getName().equals("getAdditionalProperties")) {
        if (value instanceof Map<?, ?> extra && !extra.isEmpty()) {
          unknown.add(path + ": " + extra.keySet());
        }
      } else {
        walk(value, path + "." + getter.getName().substring(3), unknown);
      }
    }
  }
}
