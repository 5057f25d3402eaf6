package dev.weir.envoy.config;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * Finds what aliases do to a composed YAML document before anything walks it as a tree: a map or
 * list that contains itself (which would make a tree walk endless), and aliases that multiply the
 * document (an alias bomb, which would make it exhaust the heap).
 *
 * <p>The document is a graph in which an alias is a second edge to the node it names; each node is
 * visited once, and its size as a tree (the node and everything below it, aliases expanded) is
 * remembered, so the check takes time in proportion to the document as written.
 */
final class AliasCheck {

  private static final long SATURATED = Long.MAX_VALUE / 2;

  private final Map<Node, Long> treeSizes = new IdentityHashMap<>();
  private final Set<Node> open = Collections.newSetFromMap(new IdentityHashMap<>());

  private AliasCheck() {}

  /**
   * Returns why the document at {@code root} is refused, or empty when it contains no cycle and its
   * aliases add at most {@code maxAddedNodes} nodes when expanded.
   */
  static Optional<String> problem(Node root, int maxAddedNodes) {
    AliasCheck check = new AliasCheck();
    long expanded;
    try {
      expanded = check.treeSize(root);
    } catch (Cycle cycle) {
      return Optional.of(
          "recursive alias: the "
              + (cycle.node instanceof MappingNode ? "map" : "list")
              + " at line "
              + (cycle.node.getStartMark().getLine() + 1)
              + " contains itself");
    }
    long added = expanded - check.treeSizes.size();
    if (added > maxAddedNodes) {
      return Optional.of(
          "aliases expand the document by more than "
              + maxAddedNodes
              + " nodes, the limit per file");
    }
    return Optional.empty();
  }

  private long treeSize(Node node) throws Cycle {
    Long known = treeSizes.get(node);
    if (known != null) {
      return known;
    }
    if (!open.add(node)) {
      throw new Cycle(node);
    }
    long size = 1;
    if (node instanceof SequenceNode seq) {
      for (Node item : seq.getValue()) {
        size = add(size, treeSize(item));
      }
    } else if (node instanceof MappingNode map) {
      for (NodeTuple t : map.getValue()) {
        size = add(size, add(treeSize(t.getKeyNode()), treeSize(t.getValueNode())));
      }
    }
    open.remove(node);
    treeSizes.put(node, size);
    return size;
  }

  private static long add(long a, long b) {
    return Math.min(SATURATED, a + b);
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
}
