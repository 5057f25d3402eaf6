package dev.weir.core.toplimited;

/**
 * One key of the top-limited view.
 *
 * @param key the key
 * @param overLimit the estimated number of over-limit answers it got in the window
 * @param hits the hits those answers asked for, summed while the key held a counter
 * @param error how far {@code overLimit} may be from the true number, either way
 */
public record TopLimitedEntry(LimitedKey key, long overLimit, long hits, long error) {}
