package io.mirrorline.writer;

import java.util.Queue;
import java.util.function.Consumer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * How a source record becomes its copy on the target: same partition, key, value
 * (null kept), headers and original timestamp, plus provenance where the policy
 * needs it; and the two reasons not to send it at all.
 */
final class Copies {
  /** Bytes a record adds to a record batch beyond key, value and headers, rounded up. */
  static final int RECORD_OVERHEAD = 100;

  private final WriteSpec spec;

  Copies(WriteSpec spec) {
    this.spec = spec;
  }

  /** The copy's headers, or null when provenance says the target had the record before. */
  Header[] headersToWrite(SourceRecord record, String remote) {
    Provenance provenance = spec.provenance;
    if (provenance == null) {
      return record.headers;
    }
    if (provenance.hasBeenInTarget(record.headers, remote)) {
      return null;
    }
    Header[] out = java.util.Arrays.copyOf(record.headers, record.headers.length + 1);
    out[record.headers.length] = new RecordHeader(Provenance.HEADER, provenance.mark(record.topic));
    return out;
  }

  /**
   * A refusal when the record cannot fit the remote topic's max.message.bytes.
   *
   * <p>Checked before sending because the broker refuses a whole record batch,
   * not one record: one oversized record would take its neighbours with it.
   */
  Refusal oversized(SourceRecord record, Header[] headers, String remote) {
    Integer limit = spec.sizeLimits.get(remote);
    if (limit == null) {
      return null;
    }
    long size = record.size() + RECORD_OVERHEAD;
    for (Header h : headers) {
      size += h.key().length() + (h.value() == null ? 0 : h.value().length);
    }
    return size <= limit ? null : tooLarge(record, remote, size, limit);
  }

  private static Refusal tooLarge(SourceRecord record, String topic, long size, int limit) {
    return new Refusal(record.topic, record.partition, record.offset, topic, "MESSAGE_TOO_LARGE",
        "record too large: about " + size + " bytes, over the topic's max.message.bytes ("
            + limit + ")");
  }

  /**
   * The record's copy through the flow's transforms, or null when one dropped it. The
   * transforms see the record's own headers; provenance is marked on what they return.
   * {@link TransformChain.Failed} names what failed.
   */
  ProducerRecord<byte[], byte[]> transformed(TransformChain chain, SourceRecord record,
      String remote) {
    ProducerRecord<byte[], byte[]> copy = chain.apply(record, remote, record.headers);
    if (copy != null && spec.provenance != null) {
      copy.headers().add(Provenance.HEADER, spec.provenance.mark(record.topic));
    }
    return copy;
  }

  /** {@link #oversized(SourceRecord, Header[], String)} for a transformed copy. */
  Refusal oversized(SourceRecord record, ProducerRecord<byte[], byte[]> copy) {
    Integer limit = spec.sizeLimits.get(copy.topic());
    if (limit == null) {
      return null;
    }
    long size = RECORD_OVERHEAD + (copy.key() == null ? 0 : copy.key().length)
        + (copy.value() == null ? 0 : copy.value().length);
    for (Header h : copy.headers()) {
      size += h.key().length() + (h.value() == null ? 0 : h.value().length);
    }
    return size <= limit ? null : tooLarge(record, copy.topic(), size, limit);
  }

  /** A record whose delivery report was an error. */
  static final class Failure {
    final SourceRecord record;
    final String topic; // where it was sent
    final Exception error;
    final long index; // the record's index in its partition log

    Failure(SourceRecord record, String topic, Exception error, long index) {
      this.record = record;
      this.topic = topic;
      this.error = error;
      this.index = index;
    }

    /** What went wrong, in words: a refusal as such, anything else as a copy not written. */
    String describe() {
      if (Refusal.isRefusal(error)) {
        return Refusal.of(record, topic, error).describe();
      }
      return "the copy of " + record.topic + "[" + record.partition + "] offset " + record.offset
          + " to " + topic + " was not written: " + error;
    }
  }

  /**
   * Send a transformed copy. On the remote topic, in the record's own partition, it is a
   * copy like any other and the log maps its offsets; anywhere else a transform routed
   * it: written, counted, and left out of the offset mapping, which for the remote
   * topic's partition then reads like a source gap (the next copied record follows).
   */
  void send(Producer<byte[], byte[]> producer, Deliveries deliveries, PartitionLog log,
      SourceRecord record, ProducerRecord<byte[], byte[]> copy, String remote,
      Consumer<Failure> failures) {
    Integer partition = copy.partition();
    if (copy.topic().equals(remote) && partition != null && partition == record.partition) {
      sendInPartition(producer, deliveries, log, record, copy, remote, failures);
      return;
    }
    long routedIndex = log.noteRouted(record);
    producer.send(copy, deliveries.track((metadata, error) -> {
      if (error == null) {
        log.routedDelivered(routedIndex);
      } else {
        log.refusedAt(routedIndex);
        failures.accept(new Failure(record, copy.topic(), error, routedIndex));
      }
    }));
  }

  /** Send the copy; its delivery report fills in its target offset, or joins {@code failures}. */
  void send(Producer<byte[], byte[]> producer, Deliveries deliveries, PartitionLog log,
      SourceRecord record, String remote, Header[] headers, Consumer<Failure> failures) {
    sendInPartition(producer, deliveries, log, record, copy(record, remote, headers), remote,
        failures);
  }

  private static void sendInPartition(Producer<byte[], byte[]> producer, Deliveries deliveries,
      PartitionLog log, SourceRecord record, ProducerRecord<byte[], byte[]> copy, String remote,
      Consumer<Failure> failures) {
    long index = log.noteSent(record);
    producer.send(copy, new CopyReport(deliveries, log, index, record, remote, failures));
  }

  /**
   * The delivery report of a copy in its record's own partition: it fills in the
   * copy's target offset, or joins {@code failures}. One object per record, made
   * with {@code new} (see {@link Deliveries.Report}).
   */
  private static final class CopyReport extends Deliveries.Report {
    private final PartitionLog log;
    private final long index;
    private final SourceRecord record;
    private final String remote;
    private final Consumer<Failure> failures;

    CopyReport(Deliveries deliveries, PartitionLog log, long index, SourceRecord record,
        String remote, Consumer<Failure> failures) {
      super(deliveries);
      this.log = log;
      this.index = index;
      this.record = record;
      this.remote = remote;
      this.failures = failures;
    }

    @Override
    void onReport(RecordMetadata metadata, Exception error) {
      if (error == null) {
        log.delivered(index, metadata.offset(), record.timestampMs, System.currentTimeMillis());
      } else {
        log.refusedAt(index);
        failures.accept(new Failure(record, remote, error, index));
      }
    }
  }

  ProducerRecord<byte[], byte[]> copy(SourceRecord record, String remote, Header[] headers) {
    return new ProducerRecord<>(remote, record.partition, timestamp(record), record.key,
        record.value, java.util.Arrays.asList(headers));
  }

  /**
   * Count a refused record in its log and, when there is a dead-letter topic, send it
   * there; a failed send joins {@code errors}, described (see {@link #raiseDeadLetterError}).
   */
  void refused(Producer<byte[], byte[]> producer, Deliveries deliveries, PartitionLog log,
      SourceRecord record, Refusal refusal, Queue<String> errors) {
    refused(producer, deliveries, log, record, refusal, errors, () -> { });
  }

  /** The same, and {@code handled} runs once the record is dealt with for good. */
  void refused(Producer<byte[], byte[]> producer, Deliveries deliveries, PartitionLog log,
      SourceRecord record, Refusal refusal, Queue<String> errors, Runnable handled) {
    log.refusals.add(refusal);
    if (spec.deadLetterTopic == null) {
      handled.run();
      return;
    }
    ProducerRecord<byte[], byte[]> copy = new ProducerRecord<>(spec.deadLetterTopic, null,
        timestamp(record), record.key, record.value,
        java.util.Arrays.asList(refusal.deadLetterHeaders(spec.flow, record.headers)));
    producer.send(copy, deliveries.track((metadata, error) -> {
      if (error != null) {
        errors.add(record.topic + "[" + record.partition + "] offset " + record.offset + ": "
            + error.getMessage());
      } else {
        handled.run();
      }
    }));
    log.deadLettered++;
  }

  /** Fail the task if the dead-letter topic refused a record (once the sends are done). */
  void raiseDeadLetterError(Queue<String> errors) {
    String error = errors.peek();
    if (error != null) {
      throw new DeliveryFailed("flow " + spec.flow + ": dead-letter topic " + spec.deadLetterTopic
          + " refused the record from " + error);
    }
  }

  /** Under errors.tolerance = none a refusal stops the flow, naming the record. */
  void refusedOrRaise(Refusal refusal) {
    if (!spec.tolerateRefusals) {
      throw new DeliveryFailed("flow " + spec.flow + ": " + refusal.describe());
    }
  }

  private static Long timestamp(SourceRecord record) {
    return record.timestampMs >= 0 ? record.timestampMs : null;
  }
}
