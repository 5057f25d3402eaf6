package dev.weir.core.quota;

/**
 * A proxy's share of a quota bucket: the rate it may admit and its burst, valid until the next
 * share of the same proxy and bucket. Shares are ordered by ({@code epoch}, {@code sequence}).
 *
 * @param milliRate the rate, in thousandths of a request per second; 0 denies every request
 * @param burst the most requests the proxy may admit at once
 * @param spentUntil when the bucket's window is spent, the epoch millisecond it ends; else 0
 * @param epoch the creation time (epoch ms) of the owner's record of the bucket
 * @param sequence the share's number within that record
 * @param error the item's error; when not empty the other fields mean nothing
 */
public record QuotaShare(
    long milliRate, long burst, long spentUntil, long epoch, long sequence, String error) {

  /** Creates a share. */
  public QuotaShare {
    error = error == null ? "" : error;
  }

  /** Returns an error share. */
  public static QuotaShare error(String message) {
    return new QuotaShare(0, 0, 0, 0, 0, message);
  }

  /** Returns whether this share carries an error. */
  public boolean isError() {
    return !error.isEmpty();
  }

  /** Returns the rate in requests per second. */
  public double ratePerSecond() {
    return milliRate / 1000.0;
  }

  /**
   * Returns whether this share replaces {@code other}: it was made later by the same or a newer
   * record.
   */
  public boolean isNewerThan(QuotaShare other) {
    return epoch != other.epoch ? epoch > other.epoch : sequence > other.sequence;
  }
}
