package dev.weir.envoy.config;

import java.io.StringReader;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.Optional;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.events.CollectionEndEvent;
import org.yaml.snakeyaml.events.CollectionStartEvent;
import org.yaml.snakeyaml.events.DocumentEndEvent;
import org.yaml.snakeyaml.events.Event;
import org.yaml.snakeyaml.events.MappingStartEvent;
import org.yaml.snakeyaml.events.NodeEvent;
import org.yaml.snakeyaml.events.ScalarEvent;

/**
 * Finds where the first YAML document of a file nests its nodes deeper than the composer allows,
 * counting as SnakeYAML's composer does (every map, list and scalar one level below its parent,
 * aliases not at all), for an error that names the line and the descriptor that SnakeYAML's own
 * message leaves out.
 */
final class NestingDepth {

  /** A map or list being read, and the {@code key} of a descriptor map once read. */
  private static final class Open {
    private final boolean map;
    private int children;
    private String lastKey = "";
    private String descriptorKey;

    Open(boolean map) {
      this.map = map;
    }

    /** Counts {@code child}, remembering the text of a map's keys and of its {@code key} entry. */
    void add(Event child) {
      if (map && child instanceof ScalarEvent scalar) {
        if (children % 2 == 0) {
          lastKey = scalar.getValue();
        } else if (lastKey.equals("key") && descriptorKey == null) {
          descriptorKey = scalar.getValue();
        }
      } else if (map && children % 2 == 0) {
        lastKey = "";
      }
      children++;
    }
  }

  private NestingDepth() {}

  /**
   * Returns where the first document of {@code text}, read with {@code yaml}, first nests a node
   * deeper than {@code maxDepth} levels ({@code the map at line N (descriptor k) reaches level L});
   * empty when it does not, or when the text cannot be read that far.
   */
  static Optional<String> firstTooDeep(Yaml yaml, String text, int maxDepth) {
    Deque<Open> open = new ArrayDeque<>();
    try {
      Iterator<Event> events = yaml.parse(new StringReader(text)).iterator();
      while (events.hasNext()) {
        Event event = events.next();
        if (event instanceof DocumentEndEvent) {
          return Optional.empty();
        }
        if (event instanceof CollectionEndEvent) {
          open.pop();
          continue;
        }
        if (!(event instanceof NodeEvent)) {
          continue;
        }
        if (!open.isEmpty()) {
          open.peek().add(event);
        }
        if (event.is(Event.ID.Alias)) {
          continue;
        }
        int level = open.size() + 1;
        if (level > maxDepth) {
          return Optional.of(describe(event, level, open, events));
        }
        if (event instanceof CollectionStartEvent) {
          open.push(new Open(event instanceof MappingStartEvent));
        }
      }
    } catch (RuntimeException unreadable) {
      return Optional.empty();
    }
    return Optional.empty();
  }

  private static String describe(Event node, int level, Deque<Open> open, Iterator<Event> events) {
    String kind =
        node instanceof MappingStartEvent
            ? "map"
            : node instanceof CollectionStartEvent ? "list" : "value";
    String descriptor = null;
    if (node instanceof MappingStartEvent) {
      descriptor = keyOfMap(events);
    }
    for (Iterator<Open> outward = open.iterator(); descriptor == null && outward.hasNext(); ) {
      descriptor = outward.next().descriptorKey;
    }
    return "the "
        + kind
        + " at line "
        + (node.getStartMark().getLine() + 1)
        + (descriptor == null ? "" : " (descriptor " + descriptor + ")")
        + " reaches level "
        + level;
  }

  /** Reads the entries of the map just started, returning its {@code key} entry's text or null. */
  private static String keyOfMap(Iterator<Event> events) {
    Open map = new Open(true);
    int depth = 0;
    try {
      while (events.hasNext()) {
        Event event = events.next();
        if (event instanceof CollectionEndEvent) {
          if (depth == 0) {
            return map.descriptorKey;
          }
          depth--;
        } else if (event instanceof NodeEvent) {
          if (depth == 0) {
            map.add(event);
            if (map.descriptorKey != null) {
              return map.descriptorKey;
            }
          }
          if (event instanceof CollectionStartEvent) {
            depth++;
          }
        }
      }
    } catch (RuntimeException unreadable) {
      return map.descriptorKey;
    }
    return map.descriptorKey;
  }
}
