package dev.weir.server;

import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The variables of an environment that Kubernetes' service links set: for a Service {@code weir}
 * with a cluster IP, {@code WEIR_SERVICE_HOST}, {@code WEIR_SERVICE_PORT}, {@code
 * WEIR_SERVICE_PORT_<PORT NAME>}, {@code WEIR_PORT} and, per port, {@code WEIR_PORT_<n>_<PROTOCOL>}
 * with its {@code _PROTO}, {@code _PORT} and {@code _ADDR}.
 *
 * <p>A variable counts as one only when its name has one of these shapes, its value is what the
 * kubelet writes there (an IP, a port number, {@code tcp://ip:port}, the protocol), and the
 * environment also holds its Service's {@code _SERVICE_HOST} (an IP) and {@code _SERVICE_PORT} (a
 * port number), which the kubelet always sets together: a misspelled setting comes with neither.
 */
final class ServiceLinks {

  private static final String IPV4 = "\\d{1,3}(?:\\.\\d{1,3}){3}";
  private static final String IPV6 = "[0-9A-Fa-f]*:[0-9A-Fa-f:.]*";
  private static final Pattern IP = Pattern.compile(IPV4 + "|" + IPV6);
  private static final Pattern PORT = Pattern.compile("\\d{1,5}");
  private static final Pattern URL =
      Pattern.compile("(tcp|udp|sctp)://(?:" + IPV4 + "|\\[" + IPV6 + "\\]):(\\d{1,5})");
  private static final Pattern PORT_NAME = Pattern.compile("[A-Z0-9_]+");
  private static final Pattern PER_PORT =
      Pattern.compile("(\\d{1,5})_(TCP|UDP|SCTP)(?:_(PROTO|PORT|ADDR))?");
  private static final String SERVICE_HOST = "_SERVICE_HOST";
  private static final String SERVICE_PORT = "_SERVICE_PORT";

  private ServiceLinks() {}

  /** Returns the names of {@code environment}'s variables that service links set. */
  static Set<String> in(Map<String, String> environment) {
    Set<String> services = new HashSet<>();
    environment.forEach(
        (name, value) -> {
          if (name.endsWith(SERVICE_HOST) && IP.matcher(value).matches()) {
            String service = name.substring(0, name.length() - SERVICE_HOST.length());
            String port = environment.get(service + SERVICE_PORT);
            if (!service.isEmpty() && port != null && PORT.matcher(port).matches()) {
              services.add(service);
            }
          }
        });
    Set<String> links = new HashSet<>();
    environment.forEach(
        (name, value) -> {
          for (String service : services) {
            if (name.startsWith(service + "_") && isLink(name.substring(service.length()), value)) {
              links.add(name);
            }
          }
        });
    return links;
  }

  /** True when {@code rest}, a name after its Service's, and {@code value} are a link's. */
  private static boolean isLink(String rest, String value) {
    if (rest.equals(SERVICE_HOST)) {
      return IP.matcher(value).matches();
    }
    if (rest.equals(SERVICE_PORT)) {
      return PORT.matcher(value).matches();
    }
    if (rest.startsWith(SERVICE_PORT + "_")) {
      return PORT_NAME.matcher(rest.substring(SERVICE_PORT.length() + 1)).matches()
          && PORT.matcher(value).matches();
    }
    if (rest.equals("_PORT")) {
      return URL.matcher(value).matches();
    }
    if (!rest.startsWith("_PORT_")) {
      return false;
    }
    Matcher perPort = PER_PORT.matcher(rest.substring("_PORT_".length()));
    if (!perPort.matches()) {
      return false;
    }
    String port = perPort.group(1);
    String protocol = perPort.group(2).toLowerCase(Locale.ROOT);
    String field = perPort.group(3);
    if (field == null) {
      Matcher url = URL.matcher(value);
      return url.matches() && url.group(1).equals(protocol) && url.group(2).equals(port);
    }
    return switch (field) {
      case "PROTO" -> value.equals(protocol);
      case "PORT" -> value.equals(port);
      default -> IP.matcher(value).matches();
    };
  }
}
