package io.mirrorline.writer;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.spark.TaskContext;

/**
 * Waits for a task's delivery reports without outliving the task.
 *
 * <p>{@code KafkaProducer.flush()} blocks until every record is acknowledged or has
 * failed, which against a target that went away takes up to
 * {@code delivery.timeout.ms}. A task Spark kills meanwhile (the query is stopped,
 * the driver lost the flow) must end at once instead, so the task waits here,
 * looking at Spark's kill flag between short waits; the writer then discards its
 * producer, which drops whatever was still queued.
 *
 * <p>The count of records in flight is a counter, not a lock: the task thread adds
 * one per send and the producer's I/O thread takes one per report, so a lock here
 * made each thread wait for the other on every record. Only the report that brings
 * the count to zero takes this object's lock, to wake the waiting task; the task
 * looks at the count under the same lock before it waits, so that wake-up is never
 * missed.
 */
final class Deliveries {
  private static final long CHECK_MS = 100;
  private final AtomicLong outstanding = new AtomicLong();

  /**
   * A delivery report counted here: it counts its record as in flight when it is
   * made (with the send), and as reported once {@link #onReport} has run. Reports
   * of the per-record path are subclasses made with {@code new} ({@code
   * Copies.CopyReport}): a lambda is made through its call site's method handle
   * until the JIT compiler inlines it, a cost on every send of a short backlog.
   */
  abstract static class Report implements Callback {
    private final Deliveries deliveries;

    Report(Deliveries deliveries) {
      deliveries.outstanding.incrementAndGet();
      this.deliveries = deliveries;
    }

    /** What the report does with the acknowledgement or the error. */
    abstract void onReport(RecordMetadata metadata, Exception error);

    @Override
    public final void onCompletion(RecordMetadata metadata, Exception error) {
      try {
        onReport(metadata, error);
      } finally {
        deliveries.reported();
      }
    }
  }

  private void reported() {
    if (outstanding.decrementAndGet() == 0) {
      synchronized (this) {
        notifyAll();
      }
    }
  }

  /** Count one more record in flight; its report goes to {@code then}. */
  Callback track(Callback then) {
    return new Report(this) {
      @Override
      void onReport(RecordMetadata metadata, Exception error) {
        then.onCompletion(metadata, error);
      }
    };
  }

  /** Wait until every tracked record has its report; throws if Spark kills the task. */
  synchronized void awaitAll() {
    TaskContext task = TaskContext.get();
    while (outstanding.get() > 0) {
      if (task != null) {
        task.killTaskIfInterrupted();
      }
      try {
        wait(CHECK_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new DeliveryFailed("interrupted while waiting for the target's acknowledgements");
      }
    }
  }
}
