package dev.weir.e2e.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.e2e.envoy.RepoFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * No {@code <dependencies>} block of the repository's POMs declares one artifact twice, which makes
 * every build print Maven's "threaten the stability of your build" warning.
 */
class PomDependenciesTest {

  @Test
  void everyDependenciesBlock_declaresEachArtifactOnce() throws Exception {
    List<String> duplicates = new ArrayList<>();
    List<Path> poms = poms();
    for (Path pom : poms) {
      DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
      factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
      NodeList blocks =
          factory.newDocumentBuilder().parse(pom.toFile()).getElementsByTagName("dependencies");
      for (int b = 0; b < blocks.getLength(); b++) {
        Set<String> seen = new HashSet<>();
        NodeList children = blocks.item(b).getChildNodes();
        for (int i = 0; i < children.getLength(); i++) {
          if (children.item(i) instanceof Element dependency) {
            String id =
                text(dependency, "groupId")
                    + ":"
                    + text(dependency, "artifactId")
                    + ":"
                    + (text(dependency, "type").isEmpty() ? "jar" : text(dependency, "type"))
                    + ":"
                    + text(dependency, "classifier");
            if (!seen.add(id)) {
              duplicates.add(RepoFiles.root().relativize(pom) + " " + id);
            }
          }
        }
      }
    }

    assertThat(poms).hasSizeGreaterThan(5);
    assertThat(duplicates).isEmpty();
  }

  private static String text(Element parent, String child) {
    for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
      if (n instanceof Element e && e.getTagName().equals(child)) {
        return e.getTextContent().trim();
      }
    }
    return "";
  }

  private static List<Path> poms() throws IOException {
    return RepoFiles.sourceFilesUnder(RepoFiles.root()).stream()
        .filter(f -> f.getFileName().toString().equals("pom.xml"))
        .sorted()
        .toList();
  }
}
