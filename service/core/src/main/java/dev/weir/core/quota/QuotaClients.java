package dev.weir.core.quota;

/**
 * The names of quota clients (proxies' streams): the advertised address of the node the stream is
 * connected to, {@code /}, and a name unique on that node, such as {@code
 * 10.0.0.7:1051/1767225600000.42} (the node's start time and the stream's number), so a bucket's
 * owner knows where to push shares.
 */
public final class QuotaClients {

  private QuotaClients() {}

  /** Returns the name of stream {@code local} on the node advertised as {@code node}. */
  public static String name(String node, String local) {
    return node + "/" + local;
  }

  /** Returns the node part of a client's name, empty when it has none. */
  public static String nodeOf(String client) {
    int slash = client.lastIndexOf('/');
    return slash <= 0 ? "" : client.substring(0, slash);
  }
}
