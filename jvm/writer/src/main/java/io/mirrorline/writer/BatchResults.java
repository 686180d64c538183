package io.mirrorline.writer;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.spark.util.AccumulatorV2;

/**
 * Carries what real-time tasks wrote back to the driver: each task's latest report,
 * one JSON row.
 *
 * <p>A real-time task runs for a whole batch and returns nothing to a caller, so
 * its reports travel as an accumulator. While the task runs, executor heartbeats
 * carry the task's copy, which holds its latest report ({@link #report});
 * {@link RealTimeSink} picks them up. When the task succeeds Spark merges its
 * final report into the driver's copy, and the driver takes those with
 * {@link #drain}. A failed task's final report never arrives: what it wrote
 * after its last report is written again after a restart.
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

  /** The task's latest report, in place of the one before (task side). */
  void report(String row) {
    String before = rows.peek();
    rows.add(row); // first added, then the old one removed: a heartbeat never finds none
    if (before != null) {
      rows.remove(before);
    }
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
