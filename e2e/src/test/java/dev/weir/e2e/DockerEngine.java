package dev.weir.e2e;

import java.nio.file.Files;
import java.nio.file.Path;
import org.testcontainers.DockerClientFactory;

/** Whether the container tests can run here: Testcontainers reaches a Docker engine. */
public final class DockerEngine {
  private DockerEngine() {}

  /**
   * Returns why no Docker engine is reachable (what {@code DOCKER_HOST} and the default socket are,
   * and Testcontainers' error), or null when one is.
   */
  public static String unavailableReason() {
    try {
      DockerClientFactory.instance().client();
      return null;
    } catch (RuntimeException e) {
      String dockerHost = System.getenv("DOCKER_HOST");
      return "Testcontainers found no Docker engine (DOCKER_HOST "
          + (dockerHost == null ? "unset" : "= " + dockerHost)
          + ", /var/run/docker.sock "
          + (Files.exists(Path.of("/var/run/docker.sock")) ? "present" : "absent")
          + "): "
          + e.getMessage();
    }
  }
}
