package dev.weir.core.discovery.dns;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;

/** A name resolver: the A and AAAA records of a host name. */
@FunctionalInterface
public interface Resolver {

  /** The JVM's resolver ({@link InetAddress#getAllByName}), subject to its address cache. */
  Resolver SYSTEM = host -> List.of(InetAddress.getAllByName(host));

  /** Returns every address of {@code host}; throws when the name does not resolve. */
  List<InetAddress> resolve(String host) throws UnknownHostException;
}
