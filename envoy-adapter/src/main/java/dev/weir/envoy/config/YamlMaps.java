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

  /** The most keys written twice reported one by one; the rest are counted in one more warning. */
  static final int MAX_WARNINGS = 20;

  private final Map<Node, Node> resolved = new IdentityHashMap<>();
  private final List<String> warnings = new ArrayList<>();
  private int warningsLeftOut;

  private YamlMaps() {}

  /** The resolved document and the keys written twice in one map. */
  record Result(Node root, List<String> warnings) {}

  /** Resolves the document at {@code root}. */
  static Result resolve(Node root) throws MergeError {
    YamlMaps maps = new YamlMaps();
    Node out = maps.node(root);
    if (maps.warningsLeftOut > 0) {
      maps.warnings.add("yaml: " + maps.warningsLeftOut + " more keys already set in their maps");
    }
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
            warnWrittenTwice(t.getKeyNode());
          }
        }
      }
      out = entries.toNode(map);
    }
    resolved.put(node, out);
    return out;
  }

  /** Warns of {@code key}, written twice in one map, unless {@link #MAX_WARNINGS} were given. */
  private void warnWrittenTwice(Node key) {
    if (warnings.size() >= MAX_WARNINGS) {
      warningsLeftOut++;
      return;
    }
    warnings.add(
        "yaml: line "
            + (key.getStartMark().getLine() + 1)
            + ": key \""
            + ((ScalarNode) key).getValue()
            + "\" already set in map; the last value is used");
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

  /**
   * The entries of one map being resolved, by key, in the order first set. A map given for a key
   * that holds a map is merged into an accumulator of that key's entries, so a key given N times
   * costs the entries written, not N copies of all the earlier ones.
   */
  private static final class Entries {
    private final Map<Object, Slot> byKey = new LinkedHashMap<>();
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
      Slot previous = byKey.get(slot);
      if (previous == null) {
        byKey.put(slot, new Slot(key, value));
      } else {
        previous.set(value);
      }
    }

    MappingNode toNode(MappingNode like) {
      List<NodeTuple> tuples = new ArrayList<>(byKey.size());
      for (Slot slot : byKey.values()) {
        tuples.add(slot.tuple());
      }
      return new MappingNode(
          like.getTag(), true, tuples, like.getStartMark(), like.getEndMark(), like.getFlowStyle());
    }

    /** Returns what makes two keys the same key: tag and text of a scalar; null for others. */
    private static Object identity(Node key) {
      return key instanceof ScalarNode s ? List.of(s.getTag().getValue(), s.getValue()) : null;
    }
  }

  /**
   * One key of a map being resolved: the key as first written and its value, either as given or,
   * once a map was given over a map, the merged entries and the last map given (whose tag, marks
   * and style the merged map takes).
   */
  private static final class Slot {
    private final Node key;
    private Node value;
    private Entries merged;
    private MappingNode last;

    Slot(Node key, Node value) {
      this.key = key;
      this.value = value;
    }

    /** Gives the key {@code next}: merged into the value when both are maps, else replacing it. */
    void set(Node next) {
      if (next instanceof MappingNode map && (merged != null || value instanceof MappingNode)) {
        if (merged == null) {
          merged = new Entries();
          merged.putAll(((MappingNode) value).getValue());
        }
        merged.putAll(map.getValue());
        last = map;
        value = null;
      } else {
        value = next;
        merged = null;
        last = null;
      }
    }

    NodeTuple tuple() {
      return new NodeTuple(key, merged != null ? merged.toNode(last) : value);
    }
  }
}
