package dev.weir.http;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/** HTTP/1.1 spoken by hand over a socket, for tests that need bytes no client library sends. */
final class HttpText {

  private HttpText() {}

  /** Opens a connection to {@code port} on loopback that gives up reading after 10 s. */
  static Socket connect(int port) throws IOException {
    Socket socket = new Socket(InetAddress.getLoopbackAddress(), port);
    socket.setSoTimeout(10_000);
    return socket;
  }

  /** Writes {@code text} as ASCII and flushes. */
  static void send(Socket socket, String text) throws IOException {
    OutputStream out = socket.getOutputStream();
    out.write(text.getBytes(StandardCharsets.US_ASCII));
    out.flush();
  }

  /**
   * Reads one response: its head up to the blank line and as many body bytes as its {@code
   * Content-Length} says; returns it as text, or what was read before the connection ended.
   */
  static String readResponse(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    int matched = 0;
    while (matched < 4) {
      int b = in.read();
      if (b == -1) {
        return head.toString(StandardCharsets.US_ASCII);
      }
      head.write(b);
      matched = (b == "\r\n\r\n".charAt(matched)) ? matched + 1 : (b == '\r' ? 1 : 0);
    }
    String text = head.toString(StandardCharsets.US_ASCII);
    int length = 0;
    for (String line : text.split("\r\n")) {
      if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
        length = Integer.parseInt(line.substring("content-length:".length()).trim());
      }
    }
    return text + new String(in.readNBytes(length), StandardCharsets.UTF_8);
  }

  /**
   * Returns the number of bytes read from {@code socket} until the server closed it (end of stream
   * or reset); throws {@link java.net.SocketTimeoutException} when nothing arrives within the
   * socket's read timeout.
   */
  static long bytesUntilClosed(Socket socket) throws IOException {
    InputStream in = socket.getInputStream();
    byte[] buffer = new byte[1 << 16];
    long total = 0;
    try {
      for (int n = in.read(buffer); n != -1; n = in.read(buffer)) {
        total += n;
      }
    } catch (SocketException reset) {
      return total;
    }
    return total;
  }

  /** Returns whether the server closed {@code socket} (end of stream or reset) within 10 s. */
  static boolean closedByServer(Socket socket) throws IOException {
    try {
      InputStream in = socket.getInputStream();
      while (true) {
        if (in.read() == -1) {
          return true;
        }
      }
    } catch (SocketException reset) {
      return true;
    } catch (java.net.SocketTimeoutException stillOpen) {
      return false;
    }
  }
}
