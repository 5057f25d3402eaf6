package dev.weir.e2e.envoy;

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * Reads Envoy configuration written in YAML into Envoy's own protobuf messages, the way Envoy does:
 * YAML is turned into JSON and parsed with protobuf's JSON mapping, so a misspelled or misplaced
 * field is an error, and every {@code typed_config} ({@code "@type"}) must name a message of
 * Envoy's API.
 *
 * <p>The {@link JsonFormat.TypeRegistry} is built from the {@code "@type"} URLs found in the
 * document: Envoy's API is generated with {@code java_package = "io.envoyproxy." + proto package}
 * and {@code java_multiple_files}, so the type {@code
 * envoy.extensions.filters.http.router.v3.Router} is the class {@code
 * io.envoyproxy.envoy.extensions.filters.http.router.v3.Router}. A URL naming no class of the API
 * fails the parse with the URL in the message.
 */
public final class EnvoyYaml {
  private static final String TYPE_URL_PREFIX = "type.googleapis.com/";
  private static final Gson GSON = new Gson();

  private EnvoyYaml() {}

  /** Returns every YAML document in {@code file} as plain maps, lists and scalars. */
  public static List<Object> loadAll(Path file) {
    try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      List<Object> documents = new ArrayList<>();
      for (Object document : newYaml().loadAll(reader)) {
        if (document != null) {
          documents.add(document);
        }
      }
      return documents;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Returns the single YAML document in {@code file}. */
  public static Object load(Path file) {
    List<Object> documents = loadAll(file);
    if (documents.size() != 1) {
      throw new IllegalArgumentException(
          file + ": expected one YAML document, found " + documents.size());
    }
    return documents.get(0);
  }

  /**
   * Parses a YAML tree into {@code builder}'s message type and returns the message; unknown fields,
   * wrong types and unresolvable {@code typed_config} types are errors naming what is wrong.
   */
  @SuppressWarnings("unchecked")
  public static <T extends Message> T parse(Object yamlTree, Message.Builder builder) {
    try {
      JsonFormat.parser()
          .usingTypeRegistry(typeRegistryFor(yamlTree))
          .merge(toJson(yamlTree), builder);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalArgumentException(
          "not a valid " + builder.getDescriptorForType().getFullName() + ": " + e.getMessage(), e);
    }
    return (T) builder.build();
  }

  /**
   * Returns the JSON text of a YAML tree made of maps, lists, strings, numbers, booleans and nulls.
   */
  public static String toJson(Object yamlTree) {
    return GSON.toJson(toJsonElement(yamlTree, "$"));
  }

  /** Returns a type registry holding the message type of every {@code "@type"} URL in the tree. */
  public static JsonFormat.TypeRegistry typeRegistryFor(Object yamlTree) {
    JsonFormat.TypeRegistry.Builder registry = JsonFormat.TypeRegistry.newBuilder();
    for (String typeUrl : typeUrls(yamlTree)) {
      registry.add(descriptorOf(typeUrl));
    }
    return registry.build();
  }

  /** Returns the {@code "@type"} URLs found anywhere in the tree. */
  public static Set<String> typeUrls(Object yamlTree) {
    Set<String> urls = new TreeSet<>();
    collectTypeUrls(yamlTree, urls);
    return urls;
  }

  /**
   * Returns the descriptor of the Envoy API message named by a {@code type.googleapis.com/...} URL.
   */
  public static Descriptor descriptorOf(String typeUrl) {
    if (!typeUrl.startsWith(TYPE_URL_PREFIX)) {
      throw new IllegalArgumentException(
          "@type '" + typeUrl + "' does not start with '" + TYPE_URL_PREFIX + "'");
    }
    String fullName = typeUrl.substring(TYPE_URL_PREFIX.length());
    String className = javaClassName(fullName);
    try {
      Class<?> type = Class.forName(className);
      return (Descriptor) type.getMethod("getDescriptor").invoke(null);
    } catch (ReflectiveOperationException e) {
      throw new IllegalArgumentException(
          "@type '" + typeUrl + "' is not a message of Envoy's API (no class " + className + ")",
          e);
    }
  }

  private static String javaClassName(String protoFullName) {
    if (protoFullName.startsWith("envoy.")) {
      return "io.envoyproxy." + protoFullName;
    }
    if (protoFullName.startsWith("xds.")) {
      return "com.github." + protoFullName;
    }
    if (protoFullName.startsWith("google.protobuf.")) {
      return "com.google.protobuf." + protoFullName.substring("google.protobuf.".length());
    }
    throw new IllegalArgumentException(
        "@type '" + protoFullName + "' is outside envoy.*, xds.* and google.protobuf.*");
  }

  private static void collectTypeUrls(Object node, Set<String> urls) {
    if (node instanceof Map<?, ?> map) {
      Object type = map.get("@type");
      if (type instanceof String url) {
        urls.add(url);
      }
      map.values().forEach(value -> collectTypeUrls(value, urls));
    } else if (node instanceof List<?> list) {
      list.forEach(value -> collectTypeUrls(value, urls));
    }
  }

  private static JsonElement toJsonElement(Object node, String path) {
    if (node == null) {
      return JsonNull.INSTANCE;
    }
    if (node instanceof Map<?, ?> map) {
      JsonObject object = new JsonObject();
      for (Map.Entry<?, ?> entry : map.entrySet()) {
        if (!(entry.getKey() instanceof String key)) {
          throw new IllegalArgumentException(
              path + ": key " + entry.getKey() + " is not a string; only string keys are allowed");
        }
        object.add(key, toJsonElement(entry.getValue(), path + "." + key));
      }
      return object;
    }
    if (node instanceof List<?> list) {
      JsonArray array = new JsonArray();
      for (int i = 0; i < list.size(); i++) {
        array.add(toJsonElement(list.get(i), path + "[" + i + "]"));
      }
      return array;
    }
    if (node instanceof String text) {
      return new JsonPrimitive(text);
    }
    if (node instanceof Number number) {
      return new JsonPrimitive(number);
    }
    if (node instanceof Boolean bool) {
      return new JsonPrimitive(bool);
    }
    throw new IllegalArgumentException(
        path
            + ": value "
            + node
            + " of type "
            + node.getClass().getSimpleName()
            + " is not allowed; quote it to make it a string");
  }

  private static Yaml newYaml() {
    LoaderOptions options = new LoaderOptions();
    options.setAllowDuplicateKeys(false);
    return new Yaml(new SafeConstructor(options));
  }
}
