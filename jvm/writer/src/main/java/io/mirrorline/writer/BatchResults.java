package io.mirrorline.writer;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.spark.util.AccumulatorV2;

/**
 * Carries what real-time tasks wrote back to the driver, one JSON row per finished task.
 *
 * <p>A real-time task runs for a whole batch and returns nothing to a caller, so
 * its summaries travel as an accumulator: Spark merges a task's rows into the
 * driver's copy when the task succeeds, and only then. The driver takes them
 * with {@link #drain}; a failed task's rows never arrive, which is right, since
 * its batch is written again after a restart.
 */
public final class BatchResults extends AccumulatorV2<String, List<String>> {
  private static final long serialVersionUID = 1L;
  private final ConcurrentLinkedQueue<String> rows = new ConcurrentLinkedQueue<>();

  @Override
  public boolean isZero() {
    return rows.isEmpty();
  }

  @Override
  public BatchResults copy() {
    BatchResults copy = new BatchResults();
    copy.rows.addAll(rows);
    return copy;
  }

  @Override
  public void reset() {
    rows.clear();
  }

  @Override
  public void add(String row) {
    rows.add(row);
  }

  @Override
  public void merge(AccumulatorV2<String, List<String>> other) {
    rows.addAll(other.value());
  }

  @Override
  public List<String> value() {
    return new ArrayList<>(rows);
  }

  /** Take every row merged so far (driver side). */
  List<String> drain() {
    List<String> out = new ArrayList<>();
    for (String row = rows.poll(); row != null; row = rows.poll()) {
      out.add(row);
    }
    return out;
  }
}
