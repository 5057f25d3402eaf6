package dev.weir.gubernator.http;

import io.grpc.Status;

/** grpc-gateway's mapping from a gRPC status code to the HTTP status of the JSON answer. */
public final class GrpcHttpStatus {

  private GrpcHttpStatus() {}

  /** Returns the HTTP status grpc-gateway sends for {@code code}. */
  public static int of(Status.Code code) {
    return switch (code) {
      case OK -> 200;
      case CANCELLED -> 499;
      case INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE -> 400;
      case DEADLINE_EXCEEDED -> 504;
      case NOT_FOUND -> 404;
      case ALREADY_EXISTS, ABORTED -> 409;
      case PERMISSION_DENIED -> 403;
      case UNAUTHENTICATED -> 401;
      case RESOURCE_EXHAUSTED -> 429;
      case UNIMPLEMENTED -> 501;
      case UNAVAILABLE -> 503;
      case UNKNOWN, INTERNAL, DATA_LOSS -> 500;
    };
  }
}
