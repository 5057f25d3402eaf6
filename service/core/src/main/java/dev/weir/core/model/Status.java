package dev.weir.core.model;

/** The outcome of one rate-limit check, numbered as on the wire ({@code pb.gubernator.Status}). */
public enum Status {
  /** The hits were admitted (or the request was a query of an admitting bucket). */
  UNDER_LIMIT,
  /** The hits were refused. */
  OVER_LIMIT
}
