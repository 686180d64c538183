package io.mirrorline.writer;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
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
 * <p>One writer serves one task: a micro-batch task's records ({@link #write}), or a
 * real-time task's rows one at a time as Spark's foreach sink hands them over
 * ({@link RealTimeWriter}); both send with the producer the executor's
 * at-least-once tasks share ({@link ProducerPool#shared}).
 */
final class AtLeastOnceWriter {
  private final WriteSpec spec;
  private final Copies copies;
  private final PartitionLogs logs = new PartitionLogs();
  private final ConcurrentLinkedQueue<Copies.Failure> failed = new ConcurrentLinkedQueue<>();
  private final List<Refused> refused = new ArrayList<>();
  private final Deliveries deliveries = new Deliveries();
  private ProducerPool.Lease lease;
  private TransformChain chain; // null: records are copied as they are

  AtLeastOnceWriter(WriteSpec spec) {
    this.spec = spec;
    this.copies = new Copies(spec);
  }

  /** A record the target refused, and how. */
  private static final class Refused {
    final SourceRecord record;
    final Refusal refusal;

    Refused(SourceRecord record, Refusal refusal) {
      this.record = record;
      this.refusal = refusal;
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
    lease = ProducerPool.shared(spec.flow, spec.producer);
  }

  /** Send the record's copy, or count why it is not sent. */
  void accept(SourceRecord record) {
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
      refused.add(new Refused(record, tooLarge));
      return;
    }
    copies.send(lease.producer(), deliveries, log, record, remote, headers, failed);
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
      refused.add(new Refused(record, refusal));
      return;
    }
    copies.send(lease.producer(), deliveries, log, record, copy, remote, failed);
  }

  /**
   * Wait for every delivery report, then count or dead-letter the refused records;
   * the logs are complete once this returns. A failure discards the producer.
   */
  Collection<PartitionLog> finish() {
    try {
      deliveries.awaitAll();
      for (Copies.Failure f : failed) {
        Refusal refusal = Refusal.of(f.record, f.topic, f.error);
        if (!(Refusal.isRefusal(f.error) && spec.tolerateRefusals)) {
          throw new DeliveryFailed("flow " + spec.flow + ": " + refusal.describe()
              + (failed.size() > 1 ? " (and " + (failed.size() - 1) + " more)" : ""));
        }
        refused.add(new Refused(f.record, refusal));
      }
      deadLetter();
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
      lease.discard();
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

  /** Count the refused records and write them to the dead-letter topic, if there is one. */
  private void deadLetter() {
    ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
    for (Refused f : refused) {
      copies.refused(lease.producer(), deliveries, logs.of(f.record), f.record, f.refusal, errors);
    }
    deliveries.awaitAll();
    copies.raiseDeadLetterError(errors);
  }
}
