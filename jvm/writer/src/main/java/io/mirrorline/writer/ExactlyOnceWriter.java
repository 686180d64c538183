package io.mirrorline.writer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.header.Header;

/**
 * Exactly-once writing: one Kafka transaction per source partition and task.
 *
 * <p>For each source partition of its input, a task:
 *
 * <ol>
 *   <li>takes a producer with the partition's transactional id
 *       ({@code mirrorline.<flow>.<topic>.<partition>}). A new one is initialised,
 *       which fences every earlier producer with that id (a retried task, a task of
 *       a driver that lost the flow) and completes or aborts what it left open. One
 *       kept from an earlier batch on this executor is used as it is; if another
 *       producer has taken the id since, the broker fences it at its first request,
 *       and the task starts again with a new one;
 *   <li>reads the partition's committed position (stable: nothing open on it) and
 *       skips every record before it, so a replayed batch writes nothing twice; the
 *       offset mapping of the records it skips is read back from the progress the
 *       earlier attempt committed ({@link CommittedRuns}) and reported as its own;
 *   <li>writes the remaining records, the partition's new progress record and its
 *       committed position, and commits all of it at once.
 * </ol>
 *
 * <p>The committed position is kept twice in the same transaction: in the progress
 * topic (what the driver reads at start), and as the committed offset of the
 * consumer group {@code mirrorline.position.<flow>} on the remote topic-partition,
 * an index that answers "how far has this partition been committed" with one
 * request. The group's offset is the target offset after the flow's last copy in
 * the partition; its metadata holds the source position as JSON,
 * {@code {"next_offset": 1234, "version": 1}}.
 *
 * <p>A record the target refuses makes the whole transaction fail. Under
 * {@code errors.tolerance = all} the task aborts it, remembers the refused records
 * and writes the partition again, sending those records to the dead-letter topic
 * (in the same transaction) instead of the remote topic.
 */
final class ExactlyOnceWriter {
  /** Attempts of one partition's transaction while the target refuses new records in it. */
  static final int MAX_ATTEMPTS = 5;
  static final Duration TIMEOUT = Duration.ofSeconds(60);

  private final WriteSpec spec;
  private final Copies copies;
  private TransformChain chain; // null: records are copied as they are

  ExactlyOnceWriter(WriteSpec spec) {
    this.spec = spec;
    this.copies = new Copies(spec);
  }

  static String transactionalId(String flow, String topic, int partition) {
    return "mirrorline." + flow + "." + topic + "." + partition;
  }

  /**
   * Write a task's records, one partition's transaction after the other. The reader
   * hands a partition's records over together, and the first attempt sends them as
   * they are read; they are kept, for a further attempt.
   */
  Collection<PartitionLog> write(Iterator<SourceRecord> records) {
    Peeking input = new Peeking(records);
    List<PartitionLog> logs = new ArrayList<>();
    chain = TransformChain.start(spec.transforms);
    try {
      while (input.hasNext()) {
        logs.add(new PartitionTransaction(input.peek()).run(input));
      }
    } finally {
      if (chain != null) {
        chain.close();
      }
    }
    return logs;
  }

  /** An iterator that shows its next element before handing it over. */
  private static final class Peeking {
    private final Iterator<SourceRecord> in;
    private SourceRecord next;

    Peeking(Iterator<SourceRecord> in) {
      this.in = in;
    }

    boolean hasNext() {
      return next != null || in.hasNext();
    }

    SourceRecord peek() {
      if (next == null) {
        next = in.next();
      }
      return next;
    }

    SourceRecord next() {
      SourceRecord record = peek();
      next = null;
      return record;
    }
  }

  /** The producer of the partition's transaction was fenced while kept between batches. */
  private static final class StaleProducer extends RuntimeException {
    private static final long serialVersionUID = 1L;
  }

  private final class PartitionTransaction {
    // The partition's records read so far; every attempt goes over them, then on reading.
    private final List<SourceRecord> records = new ArrayList<>();
    private final String topic;
    private final int partition;
    private final long firstOffset;
    private final String remote;
    private final String transactionalId;
    // Refused in an earlier attempt: dead-lettered this time (errors.tolerance = all).
    private final Map<Long, Refusal> refused = new HashMap<>();

    PartitionTransaction(SourceRecord first) {
      this.topic = first.topic;
      this.partition = first.partition;
      this.firstOffset = first.offset;
      this.remote = spec.remoteTopic(topic);
      this.transactionalId = transactionalId(spec.flow, topic, partition);
    }

    /** The partition's records: those read so far, then the rest of its run in {@code input}. */
    private Iterator<SourceRecord> all(Peeking input) {
      return new Iterator<>() {
        private int index;

        @Override
        public boolean hasNext() {
          if (index < records.size()) {
            return true;
          }
          if (input.hasNext() && input.peek().partition == partition && input.peek().topic.equals(topic)) {
            records.add(input.next());
            return true;
          }
          return false;
        }

        @Override
        public SourceRecord next() {
          if (!hasNext()) {
            throw new NoSuchElementException();
          }
          return records.get(index++);
        }
      };
    }

    PartitionLog run(Peeking input) {
      int attempts = 0;
      while (attempts < MAX_ATTEMPTS) {
        boolean[] reused = {false};
        KafkaProducer<byte[], byte[]> producer =
            ProducerPool.borrowTransactional(spec.producer, transactionalId, reused);
        try {
          if (!reused[0]) {
            producer.initTransactions();
          }
          PartitionLog log = attempt(producer, reused[0], input);
          ProducerPool.giveBackTransactional(spec.producer, transactionalId, producer);
          if (log != null) {
            return log;
          }
          attempts++;
        } catch (StaleProducer e) {
          ProducerPool.discard(producer); // the next one is new and fences whoever took the id
        } catch (KafkaException e) {
          ProducerPool.discard(producer);
          if (!(reused[0] && isFencing(e))) {
            throw new DeliveryFailed("flow " + spec.flow + ": transaction for " + topic + "["
                + partition + "] failed: " + e.getMessage());
          }
        } catch (RuntimeException | Error e) {
          ProducerPool.discard(producer);
          throw e;
        }
      }
      throw new DeliveryFailed("flow " + spec.flow + ": " + topic + "[" + partition
          + "]: the target kept refusing new records after " + MAX_ATTEMPTS
          + " attempts of one transaction");
    }

    /** One transaction; null when it was aborted to leave out newly refused records. */
    private PartitionLog attempt(KafkaProducer<byte[], byte[]> producer, boolean reused, Peeking input) {
      Positions.Position committed = Positions.read(spec.exactlyOnce, remote, partition, TIMEOUT);
      PartitionLog log = new PartitionLog(topic, partition, firstOffset);
      ConcurrentLinkedQueue<Copies.Failure> failures = new ConcurrentLinkedQueue<>();
      ConcurrentLinkedQueue<String> deadLetterErrors = new ConcurrentLinkedQueue<>();
      Deliveries deliveries = new Deliveries();
      boolean begun = false;
      for (Iterator<SourceRecord> it = all(input); it.hasNext(); ) {
        SourceRecord record = it.next();
        if (committed.nextSourceOffset >= 0 && record.offset < committed.nextSourceOffset) {
          log.skipped++; // an earlier attempt committed it
          continue;
        }
        if (!begun) {
          producer.beginTransaction();
          begun = true;
        }
        Header[] headers = copies.headersToWrite(record, remote);
        if (headers == null) {
          log.filtered++;
          continue;
        }
        Refusal found = refused.get(record.offset);
        ProducerRecord<byte[], byte[]> copy = null;
        if (found == null && chain != null) {
          try {
            copy = copies.transformed(chain, record, remote);
            if (copy == null) {
              log.dropped++;
              continue;
            }
            found = copies.oversized(record, copy);
          } catch (TransformChain.Failed e) {
            found = Refusal.transformFailed(record, remote, e);
          }
        } else if (found == null) {
          found = copies.oversized(record, headers, remote);
        }
        if (found == null && copy != null) {
          copies.send(producer, deliveries, log, record, copy, remote, failures::add);
        } else if (found == null) {
          copies.send(producer, deliveries, log, record, remote, headers, failures::add);
        } else {
          copies.refusedOrRaise(found);
          copies.refused(producer, deliveries, log, record, found, deadLetterErrors);
        }
      }
      long last = records.get(records.size() - 1).offset; // the loop read the whole run
      log.nextOffset = Math.max(last + 1, Math.max(0, committed.nextSourceOffset));
      if (log.skipped > 0) {
        log.inherit(CommittedRuns.within(spec.exactlyOnce, spec.flow, topic, partition,
            firstOffset, committed.nextSourceOffset, TIMEOUT));
      }
      if (!begun) {
        return log; // an earlier attempt committed all of it
      }
      deliveries.awaitAll();
      if (!failures.isEmpty()) {
        noteRefusals(failures, reused);
        producer.abortTransaction();
        return null;
      }
      copies.raiseDeadLetterError(deadLetterErrors);
      commit(producer, log, committed.targetOffset);
      return log;
    }

    /** Remember refused records for the next attempt; anything else fails the task. */
    private void noteRefusals(Collection<Copies.Failure> failures, boolean reused) {
      for (Copies.Failure failure : failures) {
        SourceRecord record = failure.record;
        Exception error = failure.error;
        if (reused && isFencing(error)) {
          throw new StaleProducer();
        }
        if (!Refusal.isRefusal(error)) {
          throw new DeliveryFailed("flow " + spec.flow + ": " + failure.describe());
        }
        Refusal found = Refusal.of(record, failure.topic, error);
        copies.refusedOrRaise(found);
        refused.put(record.offset, found);
      }
    }

    /** Add the progress and the position to the transaction and commit it. */
    private void commit(KafkaProducer<byte[], byte[]> producer, PartitionLog log, long committedTarget) {
      long[][] delivered = log.deliveredOffsets();
      long[] target = delivered[1];
      producer.send(new ProducerRecord<>(spec.exactlyOnce.progressTopic,
          ProgressRecords.key(spec.flow, topic, partition),
          ProgressRecords.value(log.nextOffset, log.allRuns(delivered[0], target),
              System.currentTimeMillis())));
      long position = target.length > 0 ? target[target.length - 1] + 1 : committedTarget;
      producer.sendOffsetsToTransaction(
          Map.of(new TopicPartition(remote, partition),
              new OffsetAndMetadata(position, ProgressRecords.positionMetadata(log.nextOffset))),
          new ConsumerGroupMetadata(spec.exactlyOnce.positionGroup));
      producer.commitTransaction();
    }
  }

  private static boolean isFencing(Throwable error) {
    for (Throwable e = error; e != null; e = e.getCause()) {
      if (e instanceof ProducerFencedException || e instanceof InvalidProducerEpochException) {
        return true;
      }
    }
    return false;
  }
}
