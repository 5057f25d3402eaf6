package dev.weir.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.weir.proto.gubernator.RateLimitReq;
import dev.weir.proto.gubernator.RateLimitResp;
import dev.weir.proto.gubernator.Status;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Runs the examples of {@link WeirClient}'s Javadoc, which must be this class's code verbatim. */
class WeirClientJavadocExamplesTest {

  private static final String CLIENT_HEADING = "\n## The client\n";

  private Server server;
  private String address;

  @BeforeEach
  void startServer() throws Exception {
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(new RecordingV1("node"))
            .build()
            .start();
    address = "127.0.0.1:" + server.getPort();
  }

  @AfterEach
  void stopServer() {
    server.shutdownNow();
  }

  @Test
  void classExample_check_isAllowed() {
    assertThat(classExample(address, 12345)).isTrue();
  }

  @Test
  void javadoc_examples_areThisClassVerbatim() throws Exception {
    JavadocExamples.assertAllIn(
        Path.of("src/main/java/dev/weir/client/WeirClient.java"),
        Path.of("src/test/java/dev/weir/client/WeirClientJavadocExamplesTest.java"));
  }

  @Test
  void libraryDocsClientExample_isThisClassVerbatim() throws Exception {
    String docs = Files.readString(Path.of("../../docs/library.md"));
    int heading = docs.indexOf(CLIENT_HEADING);
    assertThat(heading).as("heading '## The client' in docs/library.md").isNotNegative();
    String section = docs.substring(heading);
    int fence = section.indexOf("```java\n");
    assertThat(fence).as("a java example under '## The client' in docs/library.md").isNotNegative();
    int start = fence + "```java\n".length();
    List<String> example =
        section.substring(start, section.indexOf("```", start)).lines()
            .map(String::strip)
            .filter(line -> !line.isEmpty())
            .toList();

    assertThat(example).as("the client example of docs/library.md").isNotEmpty();
    JavadocExamples.assertIn(
        example, Path.of("src/test/java/dev/weir/client/WeirClientJavadocExamplesTest.java"));
  }

  private static boolean classExample(String address, long accountId) {
    try (WeirClient client = WeirClient.builder().target(address).build()) {
      RateLimitReq request =
          RateLimitReq.newBuilder()
              .setName("requests_per_sec")
              .setUniqueKey("account:" + accountId)
              .setHits(1)
              .setLimit(100)
              .setDuration(1000)
              .build();
      RateLimitResp response = client.check(request).join();
      return response.getStatus() == Status.UNDER_LIMIT;
    }
  }
}
