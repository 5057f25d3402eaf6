package dev.weir.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.weir.core.config.ConfigException;
import dev.weir.core.config.EnvReader;
import dev.weir.core.config.EnvVar;
import dev.weir.core.config.HostPort;
import dev.weir.core.config.WeirConfig;
import dev.weir.tls.CertificateAuthority;
import dev.weir.tls.Pem;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class MainTest {

  private static final HostPort PEER = new HostPort("10.0.0.1", 1052);
  private static final String SECRET = "main-test-peer-secret";

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();

  private int run(List<String> args, Map<String, String> env) throws Exception {
    return Main.run(
        args,
        env,
        new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  private String stderr() {
    return err.toString(StandardCharsets.UTF_8);
  }

  /**
   * Runs the node with {@code settings} over gRPC and HTTP listeners on 127.0.0.1 port 0 and no
   * warm-up, failing if it has not returned within 60 seconds; returns its exit status.
   */
  private int runOnLoopback(Map<String, String> settings) throws Exception {
    Map<String, String> env = new HashMap<>();
    env.put("WEIR_GRPC_ADDRESS", "127.0.0.1:0");
    env.put("WEIR_HTTP_ADDRESS", "127.0.0.1:0");
    env.putAll(settings);
    return runWithoutWarmup(env);
  }

  /**
   * Runs the node with {@code env} and no warm-up, failing if it has not returned within 60
   * seconds; returns its exit status.
   */
  private int runWithoutWarmup(Map<String, String> env) throws Exception {
    Map<String, String> withoutWarmup = new HashMap<>(env);
    withoutWarmup.put("WEIR_WARMUP", "0s");
    return assertTimeoutPreemptively(
        Duration.ofSeconds(60), () -> run(List.of(), withoutWarmup));
  }

  /** Asserts that the node exited with {@code status} after writing only {@code line} to stderr. */
  private void assertExitedWithLine(int actual, int status, String line) {
    assertThat(actual).isEqualTo(status);
    assertThat(stderr()).isEqualTo(line + System.lineSeparator());
  }

  @Test
  void run_badCacheSize_exit2WithOneLine() throws Exception {
    int status = run(List.of(), Map.of("WEIR_CACHE_SIZE", "abc"));

    assertThat(status).isEqualTo(2);
    assertThat(stderr())
        .isEqualTo(
            "WEIR_CACHE_SIZE='abc' is not valid: expected a whole number from 1 to 2147483647"
                + System.lineSeparator());
  }

  @Test
  void run_negativeHttpQueue_exit2NamingVariableAndRange() throws Exception {
    int status = run(List.of(), Map.of("WEIR_HTTP_MAX_QUEUE", "-5"));

    assertThat(status).isEqualTo(2);
    assertThat(stderr())
        .isEqualTo(
            "WEIR_HTTP_MAX_QUEUE='-5' is not valid: expected a whole number from 1 to 1000000"
                + System.lineSeparator());
  }

  @Test
  void run_badValueInConfigFile_exit2NamingVariable(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("weir.conf");
    Files.writeString(file, "GUBER_GRPC_ADDRESS=nowhere\n");

    int status = run(List.of("--config", file.toString()), Map.of());

    assertThat(status).isEqualTo(2);
    assertThat(stderr())
        .startsWith("GUBER_GRPC_ADDRESS='nowhere' is not valid: expected host:port");
  }

  @Test
  void run_badStatusAddress_exit2NamingVariableValueAndForm() throws Exception {
    int status = run(List.of(), Map.of("WEIR_STATUS_HTTP_ADDRESS", "localhost"));

    assertThat(status).isEqualTo(2);
    assertThat(stderr())
        .isEqualTo(
            "WEIR_STATUS_HTTP_ADDRESS='localhost' is not valid: expected host:port with a port"
                + " from 0 to 65535, e.g. localhost:1051 or [::1]:1051 (missing ':port')"
                + System.lineSeparator());
  }

  @Test
  void run_environmentOverridesConfigFile_envValueValidated(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("weir.conf");
    Files.writeString(file, "WEIR_CACHE_SIZE=10\n");

    int status = run(List.of("serve", "--config=" + file), Map.of("WEIR_CACHE_SIZE", "-1"));

    assertThat(status).isEqualTo(2);
    assertThat(stderr()).startsWith("WEIR_CACHE_SIZE='-1' is not valid");
  }

  @Test
  void run_tlsFileMissing_exit2NamingTheVariablesAndTheFile(@TempDir Path dir) throws Exception {
    Path missing = dir.resolve("missing.pem");
    int status =
        runOnLoopback(
            Map.of("WEIR_TLS_CERT", missing.toString(), "WEIR_TLS_KEY", missing.toString()));

    assertThat(status).isEqualTo(2);
    assertThat(stderr())
        .startsWith(
            "the TLS files set by WEIR_TLS_CERT, WEIR_TLS_KEY and WEIR_TLS_CA cannot be used: ")
        .contains(missing.toString());
  }

  @ParameterizedTest
  @CsvSource({
    "WEIR_GRPC_ADDRESS, gRPC",
    "WEIR_HTTP_ADDRESS, HTTP",
    "WEIR_STATUS_HTTP_ADDRESS, status",
    "GUBER_GRPC_ADDRESS, gRPC",
    "GUBER_HTTP_ADDRESS, HTTP",
    "GUBER_STATUS_HTTP_ADDRESS, status"
  })
  void run_listenerPortInUse_exit1NamingListenerVariableAndCause(String variable, String listener)
      throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      Map<String, String> env = new HashMap<>();
      String prefix = variable.substring(0, variable.indexOf('_') + 1);
      env.put(prefix + "GRPC_ADDRESS", "127.0.0.1:0");
      env.put(prefix + "HTTP_ADDRESS", "127.0.0.1:0");
      env.put(variable, "127.0.0.1:" + taken.getLocalPort());

      int status = runWithoutWarmup(env);

      assertExitedWithLine(
          status,
          1,
          "cannot bind the "
              + listener
              + " listener at "
              + variable
              + "=127.0.0.1:"
              + taken.getLocalPort()
              + ": Address already in use");
    }
  }

  @ParameterizedTest
  @CsvSource({
    "WEIR_STATUS_HTTP_ADDRESS, 127.0.0.1, status, WEIR_HTTP_ADDRESS, 0.0.0.0",
    "WEIR_STATUS_HTTP_ADDRESS, 127.0.0.1, status, WEIR_GRPC_ADDRESS, 127.0.0.1",
    "WEIR_HTTP_ADDRESS, 127.0.0.1, HTTP, WEIR_GRPC_ADDRESS, 0.0.0.0",
    "WEIR_PEER_ADDRESS, 127.0.0.1, peer, WEIR_GRPC_ADDRESS, 127.0.0.1",
    "WEIR_PEER_ADDRESS, 127.0.0.1, peer, WEIR_HTTP_ADDRESS, 0.0.0.0",
    "GUBER_HTTP_ADDRESS, 127.0.0.1, HTTP, GUBER_GRPC_ADDRESS, 0.0.0.0",
    "GUBER_STATUS_HTTP_ADDRESS, 127.0.0.1, status, GUBER_GRPC_ADDRESS, 127.0.0.1",
    "WEIR_PEER_ADDRESS, 127.0.0.1, peer, GUBER_HTTP_ADDRESS, 0.0.0.0"
  })
  void run_twoListenersOnOnePort_exit2NamingBothVariables(
      String variable, String host, String listener, String otherVariable, String otherHost)
      throws Exception {
    try (ServerSocket held = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      int port = held.getLocalPort();
      Map<String, String> env = new HashMap<>();
      String prefix = otherVariable.substring(0, otherVariable.indexOf('_') + 1);
      env.put(prefix + "GRPC_ADDRESS", "127.0.0.1:0");
      env.put(prefix + "HTTP_ADDRESS", "127.0.0.1:0");
      env.put(variable, host + ":" + port);
      env.put(otherVariable, otherHost + ":" + port);
      env.put("WEIR_STATIC_PEERS", "127.0.0.1:1051,127.0.0.1:2051");
      env.put("WEIR_PEER_SECRET", SECRET);

      int status = runWithoutWarmup(env);

      assertExitedWithLine(
          status,
          2,
          variable
              + "='"
              + host
              + ":"
              + port
              + "' is not valid: its port is taken by "
              + otherVariable
              + "='"
              + otherHost
              + ":"
              + port
              + "'; give the "
              + listener
              + " listener a port of its own");
    }
  }

  @Test
  void run_peersWithoutSecretOrTls_exit2WithOneLineSayingWhatToSet() throws Exception {
    int status =
        run(
            List.of(),
            Map.of(
                "WEIR_GRPC_ADDRESS", "127.0.0.1:1051",
                "WEIR_STATIC_PEERS", "127.0.0.1:1051,127.0.0.1:2051"));

    assertThat(status).isEqualTo(2);
    assertThat(stderr())
        .isEqualTo(
            "a cluster of several nodes needs an authenticated peer protocol: set"
                + " WEIR_PEER_SECRET (or WEIR_PEER_SECRET_FILE) to the same secret on every node,"
                + " or turn TLS on (WEIR_TLS_CERT); WEIR_PEER_INSECURE=true runs it"
                + " unauthenticated, letting anyone who reaches the peer port (127.0.0.1:1052)"
                + " change membership and counters"
                + System.lineSeparator());
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "WEIR_PEER_SECRET=short | WEIR_PEER_SECRET is not valid: the peer secret must be 16 to"
            + " 4096 characters long, got 5",
        "WEIR_PEER_SECRET="
            + SECRET
            + ",WEIR_PEER_SECRET_FILE=/x | WEIR_PEER_SECRET and"
            + " WEIR_PEER_SECRET_FILE are both set; set one of them",
        "WEIR_PEER_SECRET_FILE=/nonexistent/secret | WEIR_PEER_SECRET_FILE='/nonexistent/secret'"
            + " cannot be read",
        "WEIR_PEER_ALLOWED_IDENTITIES=*.weir.svc,WEIR_PEER_SECRET="
            + SECRET
            + " | WEIR_PEER_ALLOWED_IDENTITIES needs TLS",
        "WEIR_PEER_ALLOWED_IDENTITIES=we*ir.svc | WEIR_PEER_ALLOWED_IDENTITIES='we*ir.svc' is not"
            + " valid: peer identity pattern 'we*ir.svc': '*' must be a whole DNS label",
        "WEIR_PEER_ALLOWED_IDENTITIES=10.0.0.0/8 | WEIR_PEER_ALLOWED_IDENTITIES='10.0.0.0/8' is"
            + " not valid: peer identity pattern '10.0.0.0/8' is a CIDR range or has a '/' outside"
            + " a URI, so no certificate name can match it; CIDR ranges and ports are not"
            + " identities (allowed: a DNS name, a URI such as a SPIFFE ID or one IP address",
        "WEIR_PEER_INSECURE=true,WEIR_PEER_SECRET="
            + SECRET
            + " | WEIR_PEER_INSECURE=true turns"
            + " peer authentication off, but a peer secret is set",
        "WEIR_TLS_AUTO=true | WEIR_TLS_AUTO=true cannot secure a cluster, but this node may have"
            + " peers (WEIR_STATIC_PEERS lists other nodes): each node generates its own CA, so no"
            + " node could verify another's certificate and every peer would be marked down; for a"
            + " cluster set WEIR_TLS_CERT and WEIR_TLS_KEY to certificates of one CA and WEIR_TLS_CA"
            + " to that CA, or leave TLS off and set WEIR_PEER_SECRET (or WEIR_PEER_SECRET_FILE) to"
            + " the same secret on every node; WEIR_TLS_AUTO is for a single node",
        "GUBER_TLS_AUTO=true,WEIR_PEER_SECRET="
            + SECRET
            + " | GUBER_TLS_AUTO=true cannot secure a cluster",
        "WEIR_TLS_AUTO=true,WEIR_TLS_CA=/etc/weir/ca.pem | WEIR_TLS_AUTO=true cannot secure a"
            + " cluster",
        "WEIR_TLS_CERT=/etc/weir/tls.crt,WEIR_TLS_KEY=/etc/weir/tls.key | WEIR_TLS_CERT="
            + "'/etc/weir/tls.crt' is set without WEIR_TLS_CA, but this node may have peers"
            + " (WEIR_STATIC_PEERS lists other nodes): the peer listener requires a client"
            + " certificate of a trusted CA whatever WEIR_TLS_CLIENT_AUTH says, and without"
            + " WEIR_TLS_CA only the JVM's public CAs are trusted, so peers with certificates of a"
            + " private CA would be refused and every peer marked down; set WEIR_TLS_CA to the CA"
            + " that signed the nodes' certificates (to trust public CAs, to a bundle of them)",
        "GUBER_TLS_CERT=/c.pem,GUBER_TLS_KEY=/k.pem,WEIR_PEER_SECRET="
            + SECRET
            + " | GUBER_TLS_CERT='/c.pem' is set without WEIR_TLS_CA",
        "WEIR_PEER_TLS_SERVER_NAME=weir-peers.weir.svc.cluster.local,WEIR_PEER_SECRET="
            + SECRET
            + " | WEIR_PEER_TLS_SERVER_NAME (or GUBER_TLS_CLIENT_AUTH_SERVER_NAME)="
            + "'weir-peers.weir.svc.cluster.local' is set but TLS is off: the name is what peers'"
            + " TLS server certificates are verified against; set WEIR_TLS_CERT and WEIR_TLS_KEY"
            + " (or WEIR_TLS_AUTO) to turn TLS on, or unset it",
        "WEIR_PEER_TLS_SERVER_NAME=weir-peers.svc:1052 | WEIR_PEER_TLS_SERVER_NAME is not valid:"
            + " 'weir-peers.svc:1052' is not a DNS name; give a DNS name: letters, digits, '-'"
            + " and '.', each dot-separated part 1 to 63 characters starting and ending with a"
            + " letter or digit (no '_'), with at most one trailing '.', or an IP address (IPv6 in"
            + " brackets), at most 253 characters, without a port or scheme",
        "WEIR_PEER_TLS_SERVER_NAME=weir_peers.svc | WEIR_PEER_TLS_SERVER_NAME is not valid:"
            + " 'weir_peers.svc' is not a DNS name; give a DNS name: letters, digits",
        "GUBER_TLS_CLIENT_AUTH_SERVER_NAME=https://weir-peers | GUBER_TLS_CLIENT_AUTH_SERVER_NAME"
            + " is not valid: 'https://weir-peers' is not a DNS name",
        "WEIR_PEER_TLS_SERVER_NAME=weir..svc | WEIR_PEER_TLS_SERVER_NAME is not valid: 'weir..svc'"
            + " is not a DNS name",
      })
  void run_badPeerSettings_exit2NamingTheVariable(String settings, String error) throws Exception {
    Map<String, String> env = new HashMap<>();
    env.put("WEIR_STATIC_PEERS", "127.0.0.1:1051,127.0.0.1:2051");
    env.put("WEIR_GRPC_ADDRESS", "127.0.0.1:1051");
    for (String setting : settings.split(",")) {
      String[] pair = setting.split("=", 2);
      env.put(pair[0], pair[1]);
    }

    int status = run(List.of(), env);

    assertThat(status).isEqualTo(2);
    assertThat(stderr()).startsWith(error).doesNotContain(SECRET).hasLineCount(1);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "weir.svc"})
  void run_peersWithCertificateWithoutNames_exit2NamingCertificateWhateverTheAllowList(
      String allowList, @TempDir Path dir) throws Exception {
    Map<String, String> env = new HashMap<>(bareCertificate(dir));
    env.put("WEIR_PEER_ADDRESS", "127.0.0.1:0");
    env.put("WEIR_STATIC_PEERS", "127.0.0.1:1051,127.0.0.1:2051");
    if (!allowList.isEmpty()) {
      env.put("WEIR_PEER_ALLOWED_IDENTITIES", allowList);
    }

    int status = runOnLoopback(env);

    assertExitedWithLine(
        status,
        2,
        "WEIR_TLS_CERT='"
            + dir.resolve("bare-cert.pem")
            + "' holds a certificate (CN=bare) without a DNS, URI or IP subject alternative"
            + " name, but this node may have peers (WEIR_STATIC_PEERS lists other nodes),"
            + " which allow the node calling them by those names of its certificate alone,"
            + " whatever WEIR_PEER_ALLOWED_IDENTITIES says, so every peer would refuse this"
            + " node's calls; use certificates with a DNS, URI or IP subject alternative name");
  }

  @Test
  void run_ownStaticPeerEntryWithAnotherPeerPort_exit2NamingBothVariablesAndValues()
      throws Exception {
    int status =
        runOnLoopback(
            Map.of(
                "WEIR_GRPC_ADDRESS", "127.0.0.1:41051",
                "WEIR_PEER_ADDRESS", "127.0.0.1:41052",
                "WEIR_STATIC_PEERS", "127.0.0.1:41051@41099,127.0.0.1:42051",
                "WEIR_PEER_SECRET", SECRET));

    assertExitedWithLine(
        status,
        2,
        "WEIR_STATIC_PEERS lists this node as '127.0.0.1:41051@41099', with its peer"
            + " listener on port 41099, but WEIR_PEER_ADDRESS='127.0.0.1:41052' has it listen"
            + " for peers on port 41052, so peers would call a port it does not listen on;"
            + " make the entry 127.0.0.1:41051@41052 (or 127.0.0.1:41051 alone), or set"
            + " WEIR_PEER_ADDRESS to port 41099");
  }

  @Test
  void run_ownStaticPeerEntryWithAPeerPortAndPeerAddressOnPort0_exit2NamingBothVariablesAndValues()
      throws Exception {
    int status =
        runOnLoopback(
            Map.of(
                "WEIR_GRPC_ADDRESS", "127.0.0.1:41061",
                "WEIR_PEER_ADDRESS", "127.0.0.1:0",
                "WEIR_STATIC_PEERS", "127.0.0.1:41061@41099,127.0.0.1:42061",
                "WEIR_PEER_SECRET", SECRET));

    assertExitedWithLine(
        status,
        2,
        "WEIR_STATIC_PEERS lists this node as '127.0.0.1:41061@41099', with its peer"
            + " listener on port 41099, but WEIR_PEER_ADDRESS='127.0.0.1:0' has it listen"
            + " for peers on a port the system picks at start (port 0), which no static entry"
            + " can name, so peers could not call it; set WEIR_PEER_ADDRESS to port 41099");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"127.0.0.1:41061,127.0.0.1:42061@42099", "127.0.0.1:42061,127.0.0.1:43061"})
  void run_staticPeersWithoutOwnPeerPortAndPeerAddressOnPort0_exit2NamingPeerAddressAndValue(
      String staticPeers) throws Exception {
    int status =
        runOnLoopback(
            Map.of(
                "WEIR_GRPC_ADDRESS", "127.0.0.1:41061",
                "WEIR_PEER_ADDRESS", "127.0.0.1:0",
                "WEIR_STATIC_PEERS", staticPeers,
                "WEIR_PEER_SECRET", SECRET));

    assertExitedWithLine(
        status,
        2,
        "WEIR_PEER_ADDRESS='127.0.0.1:0' is not valid with WEIR_STATIC_PEERS listing other"
            + " nodes: port 0 has this node listen for peers on a port the system picks at"
            + " start, which the other nodes cannot know, so they could not call it; set"
            + " WEIR_PEER_ADDRESS to a port of 1 to 65535, the peer port the nodes share"
            + " (default 1052) or the one this node's entry names as host:port@peerPort");
  }

  @Test
  void settings_staticPeersAloneAndPeerAddressOnPort0_accepted() {
    Map<String, String> env = new HashMap<>();
    env.put("WEIR_GRPC_ADDRESS", "127.0.0.1:41061");
    env.put("WEIR_PEER_ADDRESS", "127.0.0.1:0");
    env.put("WEIR_STATIC_PEERS", "127.0.0.1:41061");

    assertThat(ServeCommand.NodeSettings.read(env).peers().address().port()).isZero();
  }

  /**
   * Writes a certificate of a test CA without subject alternative names (CN=bare), its key and the
   * CA to {@code dir}; returns the variables naming them.
   */
  private static Map<String, String> bareCertificate(Path dir) throws Exception {
    CertificateAuthority ca = CertificateAuthority.create("test-ca", Duration.ofDays(1));
    CertificateAuthority.Identity bare = ca.issue("bare", List.of(), Duration.ofDays(1));
    Path cert = dir.resolve("bare-cert.pem");
    Path key = dir.resolve("bare-key.pem");
    Path caFile = dir.resolve("ca.pem");
    Files.writeString(cert, Pem.encode((Object[]) bare.chain()));
    Files.writeString(key, Pem.encode(bare.key()));
    Files.writeString(caFile, Pem.encode(ca.certificate()));
    return Map.of(
        "WEIR_TLS_CERT", cert.toString(),
        "WEIR_TLS_KEY", key.toString(),
        "WEIR_TLS_CA", caFile.toString());
  }

  @Test
  void settings_tlsAutoOnASingleNodeOrWithDiscovery_acceptedAloneRefusedWithPeers() {
    assertThat(ServeCommand.NodeSettings.read(Map.of("WEIR_TLS_AUTO", "true")).ops().tls().auto())
        .isTrue();
    assertThatThrownBy(
            () ->
                ServeCommand.NodeSettings.read(
                    Map.of(
                        "WEIR_TLS_AUTO", "true",
                        "WEIR_PEER_DISCOVERY_TYPE", "dns",
                        "WEIR_DNS_FQDN", "weir.weir.svc")))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith(
            "WEIR_TLS_AUTO=true cannot secure a cluster, but this node may have peers"
                + " (WEIR_PEER_DISCOVERY_TYPE=dns)");
  }

  @Test
  void settings_autoCaFileWithoutAutoTls_refusedNamingTheVariableAndWhatGeneratesTheCa() {
    assertThat(
            ServeCommand.NodeSettings.read(
                    Map.of("WEIR_TLS_AUTO", "true", "WEIR_TLS_AUTO_CA_FILE", "/tmp/ca.pem"))
                .autoCaFile())
        .contains(Path.of("/tmp/ca.pem"));
    assertThatThrownBy(
            () -> ServeCommand.NodeSettings.read(Map.of("WEIR_TLS_AUTO_CA_FILE", "/tmp/ca.pem")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_TLS_AUTO_CA_FILE='/tmp/ca.pem' is set but WEIR_TLS_AUTO is off: the file is"
                + " where the CA that WEIR_TLS_AUTO generates is written; set WEIR_TLS_AUTO=true,"
                + " or unset it");
    assertThatThrownBy(
            () ->
                ServeCommand.NodeSettings.read(
                    Map.of(
                        "WEIR_TLS_AUTO", "true",
                        "GUBER_TLS_CERT", "/c.pem",
                        "GUBER_TLS_KEY", "/k.pem",
                        "WEIR_TLS_AUTO_CA_FILE", "/tmp/ca.pem")))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "WEIR_TLS_AUTO_CA_FILE='/tmp/ca.pem' is set but GUBER_TLS_CERT is set too, so"
                + " WEIR_TLS_AUTO generates no CA to write there; unset one of them");
  }

  @Test
  void settings_certificateWithoutCa_acceptedOnASingleNodeRefusedWithDiscovery() {
    Map<String, String> tls = Map.of("WEIR_TLS_CERT", "/c.pem", "WEIR_TLS_KEY", "/k.pem");
    Map<String, String> clustered = new HashMap<>(tls);
    clustered.put("WEIR_PEER_DISCOVERY_TYPE", "dns");
    clustered.put("WEIR_DNS_FQDN", "weir.weir.svc");
    Map<String, String> withCa = new HashMap<>(clustered);
    withCa.put("WEIR_TLS_CA", "/ca.pem");

    assertThat(ServeCommand.NodeSettings.read(tls).ops().tls().ca()).isEmpty();
    assertThat(ServeCommand.NodeSettings.read(withCa).ops().tls().ca()).isPresent();
    assertThatThrownBy(() -> ServeCommand.NodeSettings.read(clustered))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith(
            "WEIR_TLS_CERT='/c.pem' is set without WEIR_TLS_CA, but this node may have peers"
                + " (WEIR_PEER_DISCOVERY_TYPE=dns)");
  }

  @Test
  void settings_peerTlsServerNameWithTls_readUnderEitherName() {
    Map<String, String> env = new HashMap<>();
    env.put("WEIR_TLS_CERT", "/c.pem");
    env.put("WEIR_TLS_KEY", "/k.pem");
    env.put("WEIR_TLS_CA", "/ca.pem");
    assertThat(ServeCommand.NodeSettings.read(env).peers().tlsServerName()).isEmpty();
    env.put("GUBER_TLS_CLIENT_AUTH_SERVER_NAME", "weir-peers.weir.svc.cluster.local");
    assertThat(ServeCommand.NodeSettings.read(env).peers().tlsServerName())
        .hasValue("weir-peers.weir.svc.cluster.local");
    env.put("WEIR_PEER_TLS_SERVER_NAME", "weir-peers.test");
    assertThat(ServeCommand.NodeSettings.read(env).peers().tlsServerName())
        .hasValue("weir-peers.test");
  }

  @Test
  void run_peerPortInUse_exit1NamingThePeerListener() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      int status =
          runOnLoopback(
              Map.of(
                  "WEIR_PEER_ADDRESS", "127.0.0.1:" + taken.getLocalPort(),
                  "WEIR_PEER_DISCOVERY_TYPE", "dns",
                  "WEIR_DNS_FQDN", "localhost",
                  "WEIR_PEER_SECRET", SECRET));

      assertExitedWithLine(
          status,
          1,
          "cannot bind the peer listener at WEIR_PEER_ADDRESS=127.0.0.1:"
              + taken.getLocalPort()
              + ": Address already in use");
    }
  }

  @Test
  void checkPortsDistinct_portZeroOtherHostOrOtherPort_accepted() {
    WeirConfig config =
        new WeirConfig(
            new HostPort("10.0.0.1", 1051),
            new HostPort("10.0.0.1", 1050),
            new HostPort("10.0.0.1", 1051),
            1000,
            "info");

    for (String status : List.of("10.0.0.1:0", "10.0.0.2:1050", "0.0.0.0:1053")) {
      OpsSettings ops =
          OpsSettings.from(new EnvReader(Map.of("WEIR_STATUS_HTTP_ADDRESS", status)));
      assertThatCode(() -> ops.checkPortsDistinct(config, Optional.of(PEER), EnvVar::name))
          .as(status)
          .doesNotThrowAnyException();
    }
  }

  @Test
  void checkPortsDistinct_httpAndGrpcOnPortZeroOrOtherHosts_accepted() {
    List<WeirConfig> configs =
        List.of(
            new WeirConfig(
                new HostPort("0.0.0.0", 0),
                new HostPort("0.0.0.0", 0),
                new HostPort("10.0.0.1", 1051),
                1000,
                "info"),
            new WeirConfig(
                new HostPort("10.0.0.1", 1051),
                new HostPort("10.0.0.2", 1051),
                new HostPort("10.0.0.1", 1051),
                1000,
                "info"));

    for (WeirConfig config : configs) {
      assertThatCode(() -> OpsSettings.DEFAULTS.checkPortsDistinct(config, Optional.of(PEER), EnvVar::name))
          .as(config.toString())
          .doesNotThrowAnyException();
    }
  }

  @Test
  void run_misspelledVariableAndBadValue_warningBeforeTheError() throws Exception {
    int status = run(List.of(), Map.of("WEIR_CAHCE_SIZE", "10", "WEIR_GRPC_ADDRESS", "nowhere"));

    assertThat(status).isEqualTo(2);
    assertThat(stderr().lines())
        .hasSize(2)
        .first()
        .isEqualTo(
            "WEIR_CAHCE_SIZE (in the environment) is not a Weir setting and is ignored; did you"
                + " mean WEIR_CACHE_SIZE?");
    assertThat(stderr().lines().toList().get(1)).startsWith("WEIR_GRPC_ADDRESS='nowhere'");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "OTEL_TRACES_SAMPLER | bogus | OTEL_TRACES_SAMPLER='bogus' is not valid: expected one of"
            + " always_on, always_off, traceidratio, parentbased_always_on,"
            + " parentbased_always_off, parentbased_traceidratio",
        "OTEL_TRACES_EXPORTER | console | OTEL_TRACES_EXPORTER='console' is not valid: expected"
            + " otlp or none",
        "OTEL_EXPORTER_OTLP_ENDPOINT | collector:4317 | OTEL_EXPORTER_OTLP_ENDPOINT='collector:4317'"
            + " is not valid: expected a URL starting with http:// or https://",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL | http/json |"
            + " OTEL_EXPORTER_OTLP_TRACES_PROTOCOL='http/json' is not valid: expected grpc or"
            + " http/protobuf"
      })
  void run_badOtelValue_exit2NamingTheVariableValueAndWhatIsAllowed(
      String variable, String value, String error) throws Exception {
    Map<String, String> settings = new HashMap<>();
    settings.put("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
    settings.put(variable, value);

    int status = runOnLoopback(settings);

    assertExitedWithLine(status, 2, error);
  }

  @ParameterizedTest
  @CsvSource({"WEIR_HTTP_ADDRESS, HTTP", "WEIR_STATUS_HTTP_ADDRESS, status"})
  void run_listenerHostDoesNotResolve_exit1NamingListenerAndVariable(
      String variable, String listener) throws Exception {
    int status = runOnLoopback(Map.of(variable, "weir-0.invalid:1050"));

    assertExitedWithLine(
        status,
        1,
        "cannot bind the "
            + listener
            + " listener at "
            + variable
            + "=weir-0.invalid:1050: its host does not resolve");
  }

  @Test
  void run_unknownArgument_exit2() throws Exception {
    int status = run(List.of("--bogus"), Map.of());

    assertThat(status).isEqualTo(2);
    assertThat(stderr()).startsWith("argument '--bogus' is not valid: expected --config FILE");
  }

  static List<Arguments> configWithoutAFile() {
    return List.of(
        Arguments.of(List.of("--config"), ""),
        Arguments.of(List.of("--config="), "; got ''"),
        Arguments.of(List.of("--config", ""), "; got ''"),
        Arguments.of(List.of("--config", " "), "; got ' '"),
        Arguments.of(List.of("--config= "), "; got ' '"));
  }

  @ParameterizedTest
  @MethodSource("configWithoutAFile")
  void run_configWithoutAFile_exit2SayingAFileIsNeededAndWhatWasGiven(
      List<String> args, String given) throws Exception {
    int status = run(args, Map.of());

    assertExitedWithLine(
        status,
        2,
        "argument '"
            + args.get(0)
            + "' is not valid: --config needs a FILE of KEY=VALUE lines, e.g. --config weir.env"
            + given);
  }

  @Test
  void run_unknownArgumentAfterTheConfigOption_exit2PointingToTheHelp() throws Exception {
    int status = run(List.of("--config", "weir.env", "--bogus"), Map.of());

    assertExitedWithLine(
        status,
        2,
        "argument '--bogus' is not valid: expected --config FILE or a subcommand of [serve,"
            + " validate-config, explain, ratelimit]; java -jar weir.jar --help lists them");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "validate-config | java -jar weir.jar validate-config [--strict] PATH",
        "explain | java -jar weir.jar explain [--node HOST:PORT] CONFIG DOMAIN"
            + " [--limit N/UNIT] DESCRIPTOR...",
        "ratelimit | java -jar weir.jar ratelimit (settings come from envoyproxy/ratelimit's"
            + " environment variables; see docs/migrating-from-ratelimit.md)"
      })
  void run_subcommandAfterTheConfigOption_exit2SayingConfigBelongsToServe(
      String subcommand, String usage) throws Exception {
    int status = run(List.of("--config", "weir.env", subcommand), Map.of());

    assertExitedWithLine(
        status,
        2,
        "argument '"
            + subcommand
            + "' is not valid: --config FILE belongs to serve (java -jar weir.jar serve"
            + " --config FILE); "
            + subcommand
            + " takes no --config; its usage is "
            + usage
            + "; java -jar weir.jar --help lists them");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "validate-config | usage: java -jar weir.jar validate-config [--strict] PATH",
        "explain | usage: java -jar weir.jar explain [--node HOST:PORT] CONFIG DOMAIN"
            + " [--limit N/UNIT] DESCRIPTOR..."
      })
  void run_subcommandAfterServeWithoutTheConfigOption_exit2SayingTheSubcommandComesFirst(
      String subcommand, String usage) throws Exception {
    int status = run(List.of("serve", subcommand, "x"), Map.of());

    assertExitedWithLine(
        status,
        2,
        "argument '"
            + subcommand
            + "' is not valid: the subcommand comes first, once; "
            + usage
            + "; java -jar weir.jar --help lists them");
  }

  @Test
  void explainUsageLine_isTheUsageOfItsHelpOnOneLine() {
    assertThat(ExplainCommand.USAGE.replaceAll("\\s+", " "))
        .startsWith(ExplainCommand.USAGE_LINE + " CONFIG ");
  }

  static List<List<String>> serveAfterTheConfigOption() {
    return List.of(
        List.of("--config", "weir.env", "serve"),
        List.of("serve", "--config", "weir.env", "serve"),
        List.of("serve", "serve"));
  }

  @ParameterizedTest
  @MethodSource("serveAfterTheConfigOption")
  void run_serveAfterTheConfigOption_exit2SayingServeComesFirstAndOnce(List<String> args)
      throws Exception {
    int status = run(args, Map.of());

    assertExitedWithLine(
        status,
        2,
        "argument 'serve' is not valid: the subcommand comes first, once; usage: java -jar"
            + " weir.jar [serve] [--config FILE]; java -jar weir.jar --help lists them");
  }

  @Test
  void run_missingConfigFile_exit2() throws Exception {
    int status = run(List.of("--config", "/nonexistent/weir.conf"), Map.of());

    assertThat(status).isEqualTo(2);
    assertThat(stderr()).startsWith("--config '/nonexistent/weir.conf' cannot be read");
  }

  @Test
  void run_misspelledVariableAndRefusalAtStart_warningBeforeTheError(@TempDir Path dir)
      throws Exception {
    Path config = Files.createDirectory(dir.resolve("config"));
    int status =
        runOnLoopback(
            Map.of(
                "WEIR_ENVOY_CONFIG", config.toString(),
                "WEIR_ENVOY_FORCE_START_WITHOUT_INTIAL_CONFIG", "true"));

    assertThat(status).isEqualTo(2);
    List<String> lines = stderr().lines().toList();
    assertThat(lines.get(0))
        .isEqualTo(
            "WEIR_ENVOY_FORCE_START_WITHOUT_INTIAL_CONFIG (in the environment) is not a Weir"
                + " setting and is ignored; did you mean"
                + " WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG?");
    assertThat(lines)
        .hasSize(2)
        .last()
        .asString()
        .startsWith(config + ": no rate limit domain loaded (WEIR_ENVOY_CONFIG)")
        .contains("set WEIR_ENVOY_FORCE_START_WITHOUT_INITIAL_CONFIG=true");
  }
}
