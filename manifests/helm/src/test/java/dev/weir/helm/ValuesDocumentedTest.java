package dev.weir.helm;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.client.utils.Serialization;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Every value of the chart has one row in manifests/README.md's table, and every row a value. */
class ValuesDocumentedTest {
  private static final Pattern ROW = Pattern.compile("(?m)^\\| `([A-Za-z0-9.]+)` \\|");

  @Test
  void everyValue_documentedOnce_andEveryRowAValue() throws IOException {
    String readme = Files.readString(Chart.REPO.resolve("manifests/README.md"));
    String helm = readme.substring(readme.indexOf("\n## Helm\n"));
    List<String> rows = new ArrayList<>();
    Matcher m = ROW.matcher(helm);
    while (m.find()) {
      rows.add(m.group(1));
    }
    Map<?, ?> values =
        Serialization.unmarshal(Files.readString(Chart.DIR.resolve("values.yaml")), Map.class);
    List<String> undocumented = new ArrayList<>();
    List<String> documented = new ArrayList<>();
    walk(values, "", rows, undocumented, documented);

    assertThat(rows).doesNotHaveDuplicates();
    assertThat(undocumented).as("values without a row").isEmpty();
    assertThat(new TreeSet<>(documented)).as("rows without a value").isEqualTo(new TreeSet<>(rows));
  }

  private static void walk(
      Map<?, ?> map,
      String prefix,
      List<String> rows,
      List<String> undocumented,
      List<String> documented) {
    for (Map.Entry<?, ?> e : map.entrySet()) {
      String path = prefix + e.getKey();
      if (rows.contains(path)) {
        documented.add(path);
      } else if (e.getValue() instanceof Map<?, ?> child && !child.isEmpty()) {
        walk(child, path + ".", rows, undocumented, documented);
      } else {
        undocumented.add(path);
      }
    }
  }
}
