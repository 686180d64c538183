package io.mirrorline.writer;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.header.Header;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * At-least-once writing (the default): every record of the task's input is sent
 * with an idempotent producer, and the task ends once every delivery report is in.
 *
 * <p>The driver saves the flow's progress only after the whole batch, so a crash
 * before that writes the batch again: duplicates, never loss. Delivery reports of
 * one target partition arrive in send order (idempotence keeps order through
 * retries), and each report fills in the exact target offset of its record, from
 * which the offset syncs are chosen.
 */
final class AtLeastOnceWriter {
  private final WriteSpec spec;
  private final Copies copies;

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

  Collection<PartitionLog> write(Iterator<InternalRow> rows, SourceRecord.Columns columns) {
    KafkaProducer<byte[], byte[]> producer = ProducerPool.borrow(spec.producer);
    PartitionLogs logs = new PartitionLogs();
    ConcurrentLinkedQueue<Copies.Failure> failed = new ConcurrentLinkedQueue<>();
    List<Refused> refused = new ArrayList<>();
    Deliveries deliveries = new Deliveries();
    try {
      while (rows.hasNext()) {
        SourceRecord record = columns.read(rows.next());
        PartitionLog log = logs.of(record);
        log.nextOffset = record.offset + 1;
        String remote = spec.remoteTopic(record.topic);
        Header[] headers = copies.headersToWrite(record, remote);
        if (headers == null) {
          log.filtered++;
          continue;
        }
        Refusal tooLarge = copies.oversized(record, headers, remote);
        if (tooLarge != null) {
          copies.refusedOrRaise(tooLarge);
          refused.add(new Refused(record, tooLarge));
          continue;
        }
        copies.send(producer, deliveries, log, record, remote, headers, failed);
      }
      deliveries.awaitAll();
      for (Copies.Failure f : failed) {
        Refusal refusal = Refusal.of(f.record, spec.remoteTopic(f.record.topic), f.error);
        if (!(Refusal.isRefusal(f.error) && spec.tolerateRefusals)) {
          throw new DeliveryFailed("flow " + spec.flow + ": " + refusal.describe()
              + (failed.size() > 1 ? " (and " + (failed.size() - 1) + " more)" : ""));
        }
        refused.add(new Refused(f.record, refusal));
      }
      deadLetter(producer, refused, logs, deliveries);
    } catch (RuntimeException | Error e) {
      ProducerPool.discard(producer); // it may be in a bad state: the next task starts afresh
      throw e;
    }
    ProducerPool.giveBack(spec.producer, producer);
    return logs.all();
  }

  /** Count the refused records and write them to the dead-letter topic, if there is one. */
  private void deadLetter(
      KafkaProducer<byte[], byte[]> producer, List<Refused> refused, PartitionLogs logs,
      Deliveries deliveries) {
    ConcurrentLinkedQueue<Exception> errors = new ConcurrentLinkedQueue<>();
    for (Refused f : refused) {
      PartitionLog log = logs.of(f.record);
      log.refusals.add(f.refusal);
      if (spec.deadLetterTopic != null) {
        producer.send(copies.deadLetter(f.record, f.refusal), deliveries.track((metadata, error) -> {
          if (error != null) {
            errors.add(error);
          }
        }));
        log.deadLettered++;
      }
    }
    if (spec.deadLetterTopic == null || refused.isEmpty()) {
      return;
    }
    deliveries.awaitAll();
    Exception error = errors.peek();
    if (error != null) {
      throw new DeliveryFailed("flow " + spec.flow + ": dead-letter topic " + spec.deadLetterTopic
          + " refused a record: " + error.getMessage());
    }
  }
}
