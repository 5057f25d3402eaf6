package dev.weir.core.grpc;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import io.grpc.Attributes;
import io.grpc.BindableService;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.SecurityLevel;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoMethodDescriptorSupplier;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * Wraps a gRPC service so that a request message that cannot be parsed is answered {@code
 * INVALID_ARGUMENT} with a one-line description naming the message type, instead of grpc-java's
 * {@code UNKNOWN: Application error processing RPC} and a SEVERE stack trace per call; and so that
 * a message refused only because a string field is not valid UTF-8 is parsed again with those
 * fields repaired ({@link Utf8Repair}) and served.
 *
 * <p>grpc-java parses a request with the method's marshaller inside its own call machinery, before
 * any interceptor or handler sees it, and turns whatever the marshaller throws into {@code UNKNOWN}.
 * So each method is re-bound with a marshaller that keeps a parse failure as a value, and a handler
 * that closes the call with it; the service's name, methods and schema descriptors (which server
 * reflection reads) stay as they were. Nothing blocks: the wrapped service may run on the
 * transport's threads. Interceptors applied before wrapping (an authentication check) still run
 * first, so an unauthenticated caller is refused as such whatever it sends.
 */
public final class MalformedRequests {

  /** The most characters of the parser's reason a description carries. */
  static final int MAX_REASON_LENGTH = 160;

  private MalformedRequests() {}

  /** Returns {@code service} bound and wrapped by {@link #guard(ServerServiceDefinition)}. */
  public static ServerServiceDefinition guard(BindableService service) {
    return guard(service.bindService());
  }

  /**
   * Returns {@code service} with every method answering an unparseable request with {@code
   * INVALID_ARGUMENT}; parseable requests reach the same handlers as before.
   */
  public static ServerServiceDefinition guard(ServerServiceDefinition service) {
    ServiceDescriptor original = service.getServiceDescriptor();
    ServiceDescriptor.Builder descriptor =
        ServiceDescriptor.newBuilder(original.getName())
            .setSchemaDescriptor(original.getSchemaDescriptor());
    List<ServerMethodDefinition<?, ?>> methods = new ArrayList<>();
    for (ServerMethodDefinition<?, ?> method : service.getMethods()) {
      ServerMethodDefinition<?, ?> guarded = guardMethod(method);
      descriptor.addMethod(guarded.getMethodDescriptor());
      methods.add(guarded);
    }
    ServerServiceDefinition.Builder out = ServerServiceDefinition.builder(descriptor.build());
    methods.forEach(out::addMethod);
    return out.build();
  }

  private static <ReqT, RespT> ServerMethodDefinition<Parsed<ReqT>, RespT> guardMethod(
      ServerMethodDefinition<ReqT, RespT> definition) {
    MethodDescriptor<ReqT, RespT> method = definition.getMethodDescriptor();
    MethodDescriptor<Parsed<ReqT>, RespT> lenient =
        method
            .toBuilder(new LenientMarshaller<>(method), method.getResponseMarshaller())
            .build();
    return ServerMethodDefinition.create(
        lenient, new GuardedHandler<>(definition.getServerCallHandler(), method));
  }

  /**
   * Returns the status {@code call} was closed with because its request could not be parsed, or
   * null when it was not: for an interceptor inside a guarded service, whose wrapper of the call
   * ({@code call} is what it wraps) sees no {@code close} of such a call, only {@code onComplete}.
   *
   * <p>It answers only for the very call the guard hands on: an interceptor with another one
   * between it and the guard that wraps the call gets that wrapper, and null for a refused call.
   */
  public static Status refusal(ServerCall<?, ?> call) {
    return call instanceof UnwrappedCall<?, ?> unwrapped ? unwrapped.refusal : null;
  }

  /**
   * Returns the description of a request to {@code method} that failed to parse with {@code
   * failure}: {@code "request is not a valid <type>: <the parser's first sentence>"}.
   */
  static String describe(MethodDescriptor<?, ?> method, Throwable failure) {
    Throwable cause = failure;
    while (cause.getCause() != null && cause.getCause() != cause) {
      cause = cause.getCause();
    }
    String reason = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
    int sentence = reason.indexOf(". ");
    if (sentence > 0) {
      reason = reason.substring(0, sentence);
    }
    if (reason.endsWith(".")) {
      reason = reason.substring(0, reason.length() - 1);
    }
    if (reason.length() > MAX_REASON_LENGTH) {
      reason = reason.substring(0, MAX_REASON_LENGTH) + "...";
    }
    return "request is not a valid " + requestType(method) + ": " + reason;
  }

  private static String requestType(MethodDescriptor<?, ?> method) {
    Descriptors.Descriptor type = requestDescriptor(method);
    return type != null
        ? type.getFullName()
        : "request message of " + method.getFullMethodName();
  }

  /**
   * Returns the protobuf type of {@code method}'s request, from its marshaller's prototype or its
   * schema (a method with a marshaller of its own keeps the schema); null when it has neither.
   */
  private static Descriptors.Descriptor requestDescriptor(MethodDescriptor<?, ?> method) {
    if (method.getRequestMarshaller() instanceof MethodDescriptor.PrototypeMarshaller<?> typed
        && typed.getMessagePrototype() instanceof Message message) {
      return message.getDescriptorForType();
    }
    if (method.getSchemaDescriptor() instanceof ProtoMethodDescriptorSupplier schema) {
      return schema.getMethodDescriptor().getInputType();
    }
    return null;
  }

  /** A request as the lenient marshaller read it: the message, or the status to close its call. */
  private record Parsed<T>(T message, Status failure) {

    static <T> Parsed<T> invalid(String description) {
      return new Parsed<>(null, Status.INVALID_ARGUMENT.withDescription(description));
    }
  }

  /**
   * Parses with the method's own marshaller and keeps a failure as a {@link Parsed} value. A stream
   * that cannot be read twice (a compressed message's) is read into memory first, so that a message
   * refused for its UTF-8 can be repaired whether or not it was compressed; a message over the
   * size limit once decompressed keeps grpc-java's {@code RESOURCE_EXHAUSTED}.
   */
  private static final class LenientMarshaller<T> implements MethodDescriptor.Marshaller<Parsed<T>> {
    private final MethodDescriptor<T, ?> method;

    LenientMarshaller(MethodDescriptor<T, ?> method) {
      this.method = method;
    }

    @Override
    public InputStream stream(Parsed<T> value) {
      return method.streamRequest(value.message());
    }

    @Override
    public Parsed<T> parse(InputStream stream) {
      InputStream in = stream;
      try {
        if (!in.markSupported()) {
          in = new ByteArrayInputStream(in.readAllBytes());
        }
        in.mark(Integer.MAX_VALUE);
        return new Parsed<>(method.parseRequest(in), null);
      } catch (IOException | RuntimeException e) {
        Status tooLarge = tooLarge(e);
        if (tooLarge != null) {
          return new Parsed<>(null, tooLarge);
        }
        if (Utf8Repair.isInvalidUtf8(e)) {
          return parseRepaired(in, e);
        }
        return Parsed.invalid(describe(method, e));
      }
    }

    /**
     * Parses the message {@code stream} holds again, from its start, with its string fields made
     * valid UTF-8 by {@link Utf8Repair}; {@code failure} is the first parse's.
     */
    private Parsed<T> parseRepaired(InputStream stream, Exception failure) {
      Descriptors.Descriptor type = requestDescriptor(method);
      if (type == null) {
        return Parsed.invalid(describe(method, failure));
      }
      try {
        stream.reset();
        byte[] repaired = Utf8Repair.repair(type, stream.readAllBytes());
        return new Parsed<>(method.parseRequest(new ByteArrayInputStream(repaired)), null);
      } catch (IOException | RuntimeException e) {
        return Parsed.invalid(describe(method, failure));
      }
    }

    /** Returns grpc-java's {@code RESOURCE_EXHAUSTED} when {@code e} or a cause carries it. */
    private static Status tooLarge(Throwable e) {
      for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
        if (t instanceof StatusRuntimeException s
            && s.getStatus().getCode() == Status.Code.RESOURCE_EXHAUSTED) {
          return s.getStatus();
        }
      }
      return null;
    }
  }

  /** Starts the original handler on an unwrapped call and answers a parse failure itself. */
  private static final class GuardedHandler<ReqT, RespT>
      implements ServerCallHandler<Parsed<ReqT>, RespT> {
    private final ServerCallHandler<ReqT, RespT> delegate;
    private final MethodDescriptor<ReqT, RespT> method;

    GuardedHandler(ServerCallHandler<ReqT, RespT> delegate, MethodDescriptor<ReqT, RespT> method) {
      this.delegate = delegate;
      this.method = method;
    }

    @Override
    public ServerCall.Listener<Parsed<ReqT>> startCall(
        ServerCall<Parsed<ReqT>, RespT> call, Metadata headers) {
      UnwrappedCall<ReqT, RespT> unwrapped = new UnwrappedCall<>(call, method);
      return new GuardedListener<>(delegate.startCall(unwrapped, headers), unwrapped);
    }
  }

  /**
   * Passes parsed messages on; on the first unparseable one it closes the call with {@code
   * INVALID_ARGUMENT} (unless the handler already closed it) and passes nothing more but the end of
   * the call.
   */
  private static final class GuardedListener<ReqT> extends ServerCall.Listener<Parsed<ReqT>> {
    private final ServerCall.Listener<ReqT> delegate;
    private final UnwrappedCall<ReqT, ?> call;
    private boolean refused;

    GuardedListener(ServerCall.Listener<ReqT> delegate, UnwrappedCall<ReqT, ?> call) {
      this.delegate = delegate;
      this.call = call;
    }

    @Override
    public void onMessage(Parsed<ReqT> message) {
      if (refused) {
        return;
      }
      if (message.failure() == null) {
        delegate.onMessage(message.message());
        return;
      }
      refused = true;
      call.closeIfOpen(message.failure());
    }

    @Override
    public void onHalfClose() {
      if (!refused) {
        delegate.onHalfClose();
      }
    }

    @Override
    public void onReady() {
      if (!refused) {
        delegate.onReady();
      }
    }

    @Override
    public void onCancel() {
      delegate.onCancel();
    }

    @Override
    public void onComplete() {
      delegate.onComplete();
    }
  }

  /**
   * The call as the original handler sees it: its own method descriptor, everything else passed
   * to the transport's call; remembers whether it was closed, and the status it refused the
   * request with.
   */
  private static final class UnwrappedCall<ReqT, RespT> extends ServerCall<ReqT, RespT> {
    private final ServerCall<Parsed<ReqT>, RespT> delegate;
    private final MethodDescriptor<ReqT, RespT> method;
    private boolean closed;
    private volatile Status refusal;

    UnwrappedCall(ServerCall<Parsed<ReqT>, RespT> delegate, MethodDescriptor<ReqT, RespT> method) {
      this.delegate = delegate;
      this.method = method;
    }

    synchronized void closeIfOpen(Status status) {
      if (!closed) {
        refusal = status;
        close(status, new Metadata());
      }
    }

    @Override
    public synchronized void close(Status status, Metadata trailers) {
      closed = true;
      delegate.close(status, trailers);
    }

    @Override
    public void request(int numMessages) {
      delegate.request(numMessages);
    }

    @Override
    public void sendHeaders(Metadata headers) {
      delegate.sendHeaders(headers);
    }

    @Override
    public void sendMessage(RespT message) {
      delegate.sendMessage(message);
    }

    @Override
    public void setOnReadyThreshold(int numBytes) {
      delegate.setOnReadyThreshold(numBytes);
    }

    @Override
    public boolean isReady() {
      return delegate.isReady();
    }

    @Override
    public boolean isCancelled() {
      return delegate.isCancelled();
    }

    @Override
    public void setMessageCompression(boolean enabled) {
      delegate.setMessageCompression(enabled);
    }

    @Override
    public void setCompression(String compressor) {
      delegate.setCompression(compressor);
    }

    @Override
    public SecurityLevel getSecurityLevel() {
      return delegate.getSecurityLevel();
    }

    @Override
    public Attributes getAttributes() {
      return delegate.getAttributes();
    }

    @Override
    public String getAuthority() {
      return delegate.getAuthority();
    }

    @Override
    public MethodDescriptor<ReqT, RespT> getMethodDescriptor() {
      return method;
    }
  }
}
