package dev.weir.envoy.config;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Finds what aliases do to a composed YAML document before anything walks it as a tree: a map or
 * list that contains itself (which would make a tree walk endless), aliases that multiply the
 * document (an alias bomb, which would make it exhaust the heap), and aliases that nest maps and
 * lists deeper than the parser lets a file be written (which would make a tree walk exhaust the
 * stack).
 *
 * <p>The document is a graph in which an alias is a second edge to the node it names; each node is
 * visited once, and its size and depth as a tree (the node and everything below it, aliases
 * expanded) are remembered, so the check takes time in proportion to the document as written.
 */
final class AliasCheck {

  private static final long SATURATED = Long.MAX_VALUE / 2;

  /** A node's size and depth as a tree: its nodes and its levels of maps and lists. */
  private record Shape(long size, int depth) {}

  /**
   * A list of maps given to a merge key, as seen from the map holding the key: its merged shape,
   * and the maps that are deeper than every map before them, in order, for naming the first map
   * that an alias to the list takes past the depth limit.
   */
  private record MergedList(Shape shape, List<Node> deepening) {}

  private final int maxDepth;
  private final Map<Node, Shape> shapes = new IdentityHashMap<>();
  private final Set<Node> open = Collections.newSetFromMap(new IdentityHashMap<>());
  /** The lists of maps given to merge keys, counted as written nodes once each. */
  private final Set<Node> mergeLists = Collections.newSetFromMap(new IdentityHashMap<>());
  /** The lists given to merge keys that hold only maps, each walked once. */
  private final Map<Node, MergedList> mergedLists = new IdentityHashMap<>();
  /** The lists given to merge keys that hold something other than a map. */
  private final Set<Node> notMerged = Collections.newSetFromMap(new IdentityHashMap<>());

  private AliasCheck(int maxDepth) {
    this.maxDepth = maxDepth;
  }

  /**
   * Returns why the document at {@code root} is refused, or empty when it contains no cycle, its
   * aliases add at most {@code maxAddedNodes} nodes when expanded, and expanded it nests maps and
   * lists at most {@code maxDepth} levels deep.
   */
  static Optional<String> problem(Node root, int maxAddedNodes, int maxDepth) {
    AliasCheck check = new AliasCheck(maxDepth);
    long expanded;
    try {
      expanded = check.shape(root, 0).size();
    } catch (Cycle cycle) {
      return Optional.of(
          "recursive alias: the "
              + kind(cycle.node)
              + " at line "
              + line(cycle.node)
              + " contains itself");
    } catch (TooDeep deep) {
      return Optional.of(
          "aliases nest maps and lists more than "
              + maxDepth
              + " levels deep, the limit per file: an alias to the "
              + kind(deep.node)
              + " at line "
              + line(deep.node)
              + " reaches level "
              + deep.level);
    }
    long written = check.shapes.size();
    for (Node list : check.mergeLists) {
      if (!check.shapes.containsKey(list)) {
        written++;
      }
    }
    long added = expanded - written;
    if (added > maxAddedNodes) {
      return Optional.of(
          "aliases expand the document by more than "
              + maxAddedNodes
              + " nodes, the limit per file");
    }
    return Optional.empty();
  }

  /** The shape of {@code node}, found inside {@code level} maps and lists. */
  private Shape shape(Node node, int level) throws Cycle, TooDeep {
    Shape known = shapes.get(node);
    if (known != null) {
      if (level + known.depth() > maxDepth) {
        throw new TooDeep(node, level + known.depth());
      }
      return known;
    }
    if (!open.add(node)) {
      throw new Cycle(node);
    }
    long size = 1;
    int below = 0;
    if (node instanceof SequenceNode seq) {
      for (Node item : seq.getValue()) {
        Shape s = shape(item, level + 1);
        size = add(size, s.size());
        below = Math.max(below, s.depth());
      }
    } else if (node instanceof MappingNode map) {
      for (NodeTuple t : map.getValue()) {
        Shape k = shape(t.getKeyNode(), level + 1);
        Shape v =
            isMergeKey(t.getKeyNode()) && mergesMaps(t.getValueNode())
                ? merged(t.getValueNode(), level)
                : shape(t.getValueNode(), level + 1);
        size = add(size, add(k.size(), v.size()));
        below = Math.max(below, Math.max(k.depth(), v.depth()));
      }
    }
    open.remove(node);
    boolean collection = node instanceof SequenceNode || node instanceof MappingNode;
    Shape shape = new Shape(size, collection ? 1 + below : 0);
    shapes.put(node, shape);
    return shape;
  }

  /**
   * The shape, as seen from the map that holds the merge key, of what the key merges into it (a map
   * or a list of maps, found inside {@code level} maps and lists): the maps' entries become the
   * holder's, so each map counts at the holder's level and adds no level of its own, and a list
   * adds none either.
   */
  private Shape merged(Node value, int level) throws Cycle, TooDeep {
    if (value instanceof MappingNode) {
      Shape m = shape(value, level);
      return new Shape(m.size(), m.depth() - 1);
    }
    MergedList known = mergedLists.get(value);
    if (known != null) {
      for (Node item : known.deepening()) {
        shape(item, level);
      }
      return known.shape();
    }
    mergeLists.add(value);
    long size = 1;
    int depth = 0;
    List<Node> deepening = new ArrayList<>();
    for (Node item : ((SequenceNode) value).getValue()) {
      Shape m = shape(item, level);
      size = add(size, m.size());
      if (deepening.isEmpty() || m.depth() - 1 > depth) {
        deepening.add(item);
      }
      depth = Math.max(depth, m.depth() - 1);
    }
    Shape shape = new Shape(size, depth);
    mergedLists.put(value, new MergedList(shape, List.copyOf(deepening)));
    return shape;
  }

  /** Whether {@code node} is the key {@code <<} that merges maps into the map holding it. */
  private static boolean isMergeKey(Node node) {
    return node instanceof ScalarNode s && s.getTag().equals(Tag.MERGE);
  }

  /** Whether a merge key's {@code value} is what YAML merges: a map or a list of maps. */
  private boolean mergesMaps(Node value) {
    if (value instanceof MappingNode || mergedLists.containsKey(value)) {
      return true;
    }
    if (!(value instanceof SequenceNode seq) || notMerged.contains(seq)) {
      return false;
    }
    if (seq.getValue().stream().allMatch(MappingNode.class::isInstance)) {
      return true;
    }
    notMerged.add(seq);
    return false;
  }

  private static long add(long a, long b) {
    return Math.min(SATURATED, a + b);
  }

  private static String kind(Node node) {
    return node instanceof MappingNode ? "map" : "list";
  }

  private static int line(Node node) {
    return node.getStartMark().getLine() + 1;
  }

  /** A node reached again while its own content is being walked. */
  private static final class Cycle extends Exception {
    private static final long serialVersionUID = 1L;
    private final transient Node node;

    Cycle(Node node) {
      super(null, null, false, false);
      this.node = node;
    }
  }

  /** An alias to {@code node} whose deepest map or list is at {@code level}, over the limit. */
  private static final class TooDeep extends Exception {
    private static final long serialVersionUID = 1L;
    private final transient Node node;
    private final int level;

    TooDeep(Node node, int level) {
      super(null, null, false, false);
      this.node = node;
      this.level = level;
    }
  }
}
