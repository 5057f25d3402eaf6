package dev.weir.envoy.config;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Resolves the maps of a composed YAML document the way envoyproxy/ratelimit's YAML library
 * (gopkg.in/yaml.v2, not strict) decodes them: each map's entries are applied in the order written,
 * a merge key ({@code <<: *anchor}, or {@code <<: [*a, *b]} where the first listed wins) applies the
 * named map's entries at its place, and a key given again replaces the earlier value, except that a
 * map given for a key that already holds a map is merged into it, key by key. The result has no
 * merge keys and no repeated keys; every key written twice in one map is reported as a warning.
 *
 * <p>The document must have passed {@link AliasCheck}: it has no cycle, and its aliases expand it by
 * a bounded number of nodes, which bounds the maps built here too. A node reached through several
 * aliases is resolved once.
 */
final class YamlMaps {

  /** A merge key's value that is neither a map nor a list of maps. */
  static final class MergeError extends Exception {
    private static final long serialVersionUID = 1L;

    MergeError(String message) {
      super(message, null, false, false);
    }
  }

  private final Map<Node, Node> resolved = new IdentityHashMap<>();
  private final List<String> warnings = new ArrayList<>();

  private YamlMaps() {}

  /** The resolved document and the keys written twice in one map. */
  record Result(Node root, List<String> warnings) {}

  /** Resolves the document at {@code root}. */
  static Result resolve(Node root) throws MergeError {
    YamlMaps maps = new YamlMaps();
    Node out = maps.node(root);
    return new Result(out, List.copyOf(maps.warnings));
  }

  private Node node(Node node) throws MergeError {
    if (node instanceof ScalarNode) {
      return node;
    }
    Node known = resolved.get(node);
    if (known != null) {
      return known;
    }
    Node out;
    if (node instanceof SequenceNode seq) {
      List<Node> items = new ArrayList<>(seq.getValue().size());
      for (Node item : seq.getValue()) {
        items.add(node(item));
      }
      out =
          new SequenceNode(
              seq.getTag(), true, items, seq.getStartMark(), seq.getEndMark(), seq.getFlowStyle());
    } else {
      MappingNode map = (MappingNode) node;
      Entries entries = new Entries();
      for (NodeTuple t : map.getValue()) {
        if (isMergeKey(t.getKeyNode())) {
          for (MappingNode merged : mergedMaps(t.getValueNode())) {
            entries.putAll(((MappingNode) node(merged)).getValue());
          }
        } else {
          if (entries.putWritten(t.getKeyNode(), node(t.getValueNode()))) {
            warnings.add(
                "yaml: line "
                    + (t.getKeyNode().getStartMark().getLine() + 1)
                    + ": key \""
                    + ((ScalarNode) t.getKeyNode()).getValue()
                    + "\" already set in map; the last value is used");
          }
        }
      }
      out = entries.toNode(map);
    }
    resolved.put(node, out);
    return out;
  }

  /** Returns the maps a merge key names, in the order they apply (the first listed last). */
  private static List<MappingNode> mergedMaps(Node value) throws MergeError {
    if (value instanceof MappingNode m) {
      return List.of(m);
    }
    if (value instanceof SequenceNode seq) {
      List<MappingNode> out = new ArrayList<>();
      for (Node item : seq.getValue()) {
        if (!(item instanceof MappingNode m)) {
          throw notMaps(value);
        }
        out.add(0, m);
      }
      return out;
    }
    throw notMaps(value);
  }

  private static MergeError notMaps(Node value) {
    return new MergeError(
        "yaml: line "
            + (value.getStartMark().getLine() + 1)
            + ": map merge requires map or sequence of maps as the value");
  }

  private static boolean isMergeKey(Node key) {
    return key instanceof ScalarNode s && s.getTag().equals(Tag.MERGE);
  }

  /** The entries of one map being resolved, by key, in the order first set. */
  private static final class Entries {
    private final Map<Object, NodeTuple> byKey = new LinkedHashMap<>();
    private final java.util.Set<Object> written = new java.util.HashSet<>();

    /** Sets a key as written in the map; returns whether it was already written there. */
    boolean putWritten(Node key, Node value) {
      Object id = identity(key);
      put(key, value, id);
      return id != null && !written.add(id);
    }

    /** Sets the entries of a merged map. */
    void putAll(List<NodeTuple> tuples) {
      for (NodeTuple t : tuples) {
        put(t.getKeyNode(), t.getValueNode(), identity(t.getKeyNode()));
      }
    }

    private void put(Node key, Node value, Object id) {
      Object slot = id != null ? id : new Object();
      NodeTuple previous = byKey.get(slot);
      if (previous != null
          && previous.getValueNode() instanceof MappingNode before
          && value instanceof MappingNode after) {
        Entries merged = new Entries();
        merged.putAll(before.getValue());
        merged.putAll(after.getValue());
        value = merged.toNode(after);
      }
      byKey.put(slot, new NodeTuple(previous == null ? key : previous.getKeyNode(), value));
    }

    MappingNode toNode(MappingNode like) {
      return new MappingNode(
          like.getTag(),
          true,
          new ArrayList<>(byKey.values()),
          like.getStartMark(),
          like.getEndMark(),
          like.getFlowStyle());
    }

    /** Returns what makes two keys the same key: tag and text of a scalar; null for others. */
    private static Object identity(Node key) {
      return key instanceof ScalarNode s ? List.of(s.getTag().getValue(), s.getValue()) : null;
    }
  }
}
