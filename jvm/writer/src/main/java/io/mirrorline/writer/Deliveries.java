package io.mirrorline.writer;

import org.apache.kafka.clients.producer.Callback;
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
 */
final class Deliveries {
  private static final long CHECK_MS = 100;
  private long outstanding;

  /** Count one more record in flight; its report goes to {@code then}. */
  Callback track(Callback then) {
    synchronized (this) {
      outstanding++;
    }
    return (metadata, error) -> {
      try {
        then.onCompletion(metadata, error);
      } finally {
        synchronized (this) {
          if (--outstanding == 0) {
            notifyAll();
          }
        }
      }
    };
  }

  /** Wait until every tracked record has its report; throws if Spark kills the task. */
  synchronized void awaitAll() {
    TaskContext task = TaskContext.get();
    while (outstanding > 0) {
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
