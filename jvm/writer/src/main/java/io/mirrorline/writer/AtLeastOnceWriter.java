package io.mirrorline.writer;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;

/**
 * At-least-once writing (the default): every record of the task's input is sent
 * with an idempotent producer, and the task ends once every delivery report is in.
 *
 * <p>The driver saves the flow's progress only after the whole batch, so a crash
 * before that writes the batch again: duplicates, never loss. Delivery reports of
 * one target partition arrive in send order (idempotence keeps order through
 * retries), and each report fills in the exact target offset of its record, from
 * which the offset syncs are chosen.
 *
 * <p>A record the producer gives up on (its delivery timed out, the broker found a
 * gap in the partition's sequence) fails the task, and the batch is written again.
 * The idempotent producer itself would go on: it resets the partition's sequence
 * numbers and delivers the partition's later records, which would then reach the
 * target before the lost record's rewrite. So the first such failure closes the
 * shared producer at once, from its delivery report, before it sends anything
 * more ({@link #failed}): on the target, the first copy of each source record
 * still comes in the source's order, and a rewrite only repeats records. Refusals
 * the flow tolerates ({@code errors.tolerance = all}) are the exception: the
 * record is skipped by design.
 *
 * <p>One writer serves one task: a micro-batch task's records ({@link #write}), or a
 * real-time task's rows one at a time as Spark's foreach sink hands them over
 * ({@link RealTimeWriter}); both send with the producer the executor's
 * at-least-once tasks share ({@link ProducerPool#shared}).
 */
final class AtLeastOnceWriter {
  private final WriteSpec spec;
  private final Copies copies;
  private final PartitionLogs logs = new PartitionLogs();
  // Failures from delivery reports not taken yet ({@link #takeFailures}), and how many came.
  private final ConcurrentLinkedQueue<Copies.Failure> failed = new ConcurrentLinkedQueue<>();
  private final AtomicInteger failures = new AtomicInteger();
  private final List<Refused> refused = new ArrayList<>();
  private int dispatched; // refused.get(i) for i < dispatched went to count and dead-letter
  private final ConcurrentLinkedQueue<String> deadLetterErrors = new ConcurrentLinkedQueue<>();
  private final Deliveries deliveries = new Deliveries();
  private final Consumer<Copies.Failure> onFailure = this::failed; // one per writer, not per record
  private volatile ProducerPool.Lease lease; // read by delivery reports
  private volatile Copies.Failure stoppedBy; // the first failure that fails the task
  private TransformChain chain; // null: records are copied as they are

  AtLeastOnceWriter(WriteSpec spec) {
    this.spec = spec;
    this.copies = new Copies(spec);
  }

  /** A record the target refused, and how. */
  private static final class Refused {
    final SourceRecord record;
    final Refusal refusal;
    final long index; // in its partition log

    Refused(SourceRecord record, Refusal refusal, long index) {
      this.record = record;
      this.refusal = refusal;
      this.index = index;
    }
  }

  /** Write a micro-batch task's records: {@link #open}, every record, {@link #finish}. */
  Collection<PartitionLog> write(Iterator<SourceRecord> records) {
    open();
    try {
      while (records.hasNext()) {
        accept(records.next());
      }
    } catch (RuntimeException | Error e) {
      abort();
      throw e;
    }
    return finish();
  }

  /** Start writing with the executor's shared producer. */
  void open() {
    chain = TransformChain.start(spec.transforms);
    lease = ProducerPool.shared(spec.flow, spec.producer, spec.partitionsPerExecutor);
  }

  /** Send the record's copy, or count why it is not sent. */
  void accept(SourceRecord record) {
    failIfStopped(); // the producer is closed: nothing more is sent
    PartitionLog log = logs.of(record);
    log.nextOffset = record.offset + 1;
    String remote = spec.remoteTopic(record.topic);
    Header[] headers = copies.headersToWrite(record, remote);
    if (headers == null) {
      log.filtered++;
      return;
    }
    if (chain != null) {
      acceptTransformed(log, record, remote);
      return;
    }
    Refusal tooLarge = copies.oversized(record, headers, remote);
    if (tooLarge != null) {
      copies.refusedOrRaise(tooLarge);
      refused.add(new Refused(record, tooLarge, log.noteRefused(record)));
      return;
    }
    try {
      copies.send(lease.producer(), deliveries, log, record, remote, headers, onFailure);
    } catch (IllegalStateException e) {
      throw closedMeanwhile(e);
    }
  }

  /** Send the record's transformed copy, or count why it is not sent. */
  private void acceptTransformed(PartitionLog log, SourceRecord record, String remote) {
    ProducerRecord<byte[], byte[]> copy;
    Refusal refusal;
    try {
      copy = copies.transformed(chain, record, remote);
      if (copy == null) {
        log.dropped++;
        return;
      }
      refusal = copies.oversized(record, copy);
    } catch (TransformChain.Failed e) {
      copy = null;
      refusal = Refusal.transformFailed(record, remote, e);
    }
    if (refusal != null) {
      copies.refusedOrRaise(refusal);
      refused.add(new Refused(record, refusal, log.noteRefused(record)));
      return;
    }
    try {
      copies.send(lease.producer(), deliveries, log, record, copy, remote, onFailure);
    } catch (IllegalStateException e) {
      throw closedMeanwhile(e);
    }
  }

  /**
   * A delivery report's error. Unless the flow tolerates it as a refusal, it closes
   * the shared producer at once: see the class comment for why.
   */
  private void failed(Copies.Failure failure) {
    failed.add(failure);
    failures.incrementAndGet();
    if (tolerated(failure) || stoppedBy != null) {
      return; // a later failure adds nothing: the producer is closed already
    }
    stoppedBy = failure; // reports may race (send and I/O threads): any first will do
    ProducerPool.Lease held = lease;
    if (held != null) {
      held.discard(failure.describe());
    }
  }

  /**
   * What a send that found the shared producer closed throws: another task's failure
   * (or this task's, reported on the producer's thread) closed it after this task
   * last looked; the error says which failure.
   */
  private RuntimeException closedMeanwhile(IllegalStateException e) {
    Copies.Failure stop = stoppedBy;
    if (stop != null) {
      return failure(stop);
    }
    String closedBy = closedBy(null);
    return closedBy == null ? e : new DeliveryFailed("flow " + spec.flow + ": " + closedBy);
  }

  private boolean tolerated(Copies.Failure failure) {
    return Refusal.isRefusal(failure.error) && spec.tolerateRefusals;
  }

  /** Throw why the task fails once a failure stopped it. */
  private void failIfStopped() {
    Copies.Failure stop = stoppedBy;
    if (stop != null) {
      throw failure(stop);
    }
  }

  /** Why the task fails: the first failure, and the one that closed the producer if another's. */
  private DeliveryFailed failure(Copies.Failure first) {
    String own = first.describe();
    String closedBy = closedBy(own);
    return new DeliveryFailed("flow " + spec.flow + ": " + own
        + (failures.get() > 1 ? " (and " + (failures.get() - 1) + " more)" : "")
        + (closedBy != null ? "; " + closedBy : ""));
  }

  /** Which failure closed the shared producer, unless none did or it was {@code own}. */
  private String closedBy(String own) {
    ProducerPool.Lease held = lease;
    String why = held == null ? null : held.discardedBecause();
    return why == null || why.equals(own) ? null : "the executor's producer was closed after " + why;
  }

  /**
   * What the target has settled so far, one summary per source partition (see
   * {@link PartitionLog#report}): a real-time task's report while it runs. The
   * records refused so far are counted and sent to the dead-letter topic first; a
   * partition's report stops short of the first of them the dead-letter topic has
   * not acknowledged yet. Throws {@link DeliveryFailed} once a failure stopped the
   * task, so that a task with no record left to send does not wait for its batch's
   * end to say so.
   */
  List<Map<String, Object>> report(long nowMs) {
    failIfStopped();
    takeFailures();
    dispatchRefused();
    List<Map<String, Object>> out = new ArrayList<>();
    for (PartitionLog log : logs.all()) {
      out.add(log.report(nowMs));
    }
    return out;
  }

  /**
   * Wait for every delivery report, then count or dead-letter the refused records;
   * the logs are complete once this returns. A failure discards the producer.
   */
  Collection<PartitionLog> finish() {
    try {
      deliveries.awaitAll();
      failIfStopped();
      takeFailures();
      dispatchRefused();
      deliveries.awaitAll();
      copies.raiseDeadLetterError(deadLetterErrors);
    } catch (RuntimeException | Error e) {
      abort();
      throw e;
    }
    lease.giveBack();
    lease = null;
    closeChain();
    return logs.all();
  }

  /** Give up: the producer may be in a bad state, so the next writer starts afresh. */
  void abort() {
    if (lease != null) {
      lease.discard("a task writing with it failed");
      lease = null;
    }
    closeChain();
  }

  private void closeChain() {
    if (chain != null) {
      chain.close();
      chain = null;
    }
  }

  /** The refusals delivery reports brought (all tolerated: nothing stopped the task). */
  private void takeFailures() {
    for (Copies.Failure f = failed.poll(); f != null; f = failed.poll()) {
      refused.add(new Refused(f.record, Refusal.of(f.record, f.topic, f.error), f.index));
    }
  }

  /** Count the new refused records and send them to the dead-letter topic, if there is one. */
  private void dispatchRefused() {
    for (; dispatched < refused.size(); dispatched++) {
      Refused f = refused.get(dispatched);
      PartitionLog log = logs.of(f.record);
      copies.refused(lease.producer(), deliveries, log, f.record, f.refusal, deadLetterErrors,
          () -> log.handledAt(f.index));
    }
  }
}
