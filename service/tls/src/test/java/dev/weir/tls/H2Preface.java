package dev.weir.tls;

import java.net.SocketException;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

/** The HTTP/2 preface sent over TLS, as the tests' probe of whether a listener lets a client in. */
final class H2Preface {

  private H2Preface() {}

  /**
   * Returns whether the listener at {@code port} answers the HTTP/2 preface with a frame over TLS
   * with ALPN {@code h2}; false when the handshake was refused.
   */
  static boolean answered(int port, SSLContext client) throws Exception {
    try (SSLSocket socket = (SSLSocket) client.getSocketFactory().createSocket("127.0.0.1", port)) {
      SSLParameters parameters = socket.getSSLParameters();
      parameters.setApplicationProtocols(new String[] {"h2"});
      socket.setSSLParameters(parameters);
      socket.setSoTimeout(10_000);
      socket.startHandshake();
      socket.getOutputStream().write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes());
      socket.getOutputStream().write(new byte[] {0, 0, 0, 4, 0, 0, 0, 0, 0});
      socket.getOutputStream().flush();
      return socket.getInputStream().readNBytes(9).length == 9;
    } catch (SSLException | SocketException refused) {
      return false;
    }
  }
}
