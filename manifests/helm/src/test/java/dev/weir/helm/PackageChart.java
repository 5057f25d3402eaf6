package dev.weir.helm;

import com.marcnuri.helm.Helm;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The build's {@code helm package}: writes the chart in {@code args[0]} as {@code weir-VERSION.tgz}
 * into the directory {@code args[1]}, with Helm's own library.
 */
public final class PackageChart {
  private PackageChart() {}

  /** Packages the chart; run by the exec plugin during {@code package}. */
  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      throw new IllegalArgumentException(
          "expected 2 arguments, the chart directory and the destination, got " + args.length);
    }
    Path destination = Files.createDirectories(Path.of(args[1]));
    new Helm(Path.of(args[0])).packageIt().withDestination(destination).call();
  }
}
