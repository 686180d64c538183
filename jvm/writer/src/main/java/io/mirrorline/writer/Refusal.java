package io.mirrorline.writer;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.errors.InvalidTimestampException;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.Errors;

/**
 * One record the target refused for good, with enough context to find it and say why.
 *
 * <p>A refusal is the target's final "no" to a record: too large, invalid, a
 * timestamp or a policy it does not accept. Timeouts, lost brokers, fencing and
 * denied permissions say nothing about the record: they fail the batch, which is
 * written again later. Under {@code errors.tolerance = none} a refusal stops the
 * flow; under {@code all} the record is skipped, counted and, with a dead-letter
 * topic, written there with the {@code mirrorline.error.*} headers below.
 */
final class Refusal {
  final String topic;
  final int partition;
  final long offset;
  final String targetTopic;
  final String code;
  final String message;

  Refusal(String topic, int partition, long offset, String targetTopic, String code, String message) {
    this.topic = topic;
    this.partition = partition;
    this.offset = offset;
    this.targetTopic = targetTopic;
    this.code = code;
    this.message = message;
  }

  static boolean isRefusal(Exception error) {
    return error instanceof RecordTooLargeException
        || error instanceof RecordBatchTooLargeException
        || error instanceof InvalidRecordException
        || error instanceof CorruptRecordException
        || error instanceof InvalidTimestampException
        || error instanceof PolicyViolationException;
  }

  /** Code of a record a transform (or MM2's converters after it) failed on. */
  static final String TRANSFORM_FAILED = "TRANSFORM_FAILED";

  /** A record the flow's transforms failed on: never sent, handled as a refusal. */
  static Refusal transformFailed(SourceRecord record, String remote, TransformChain.Failed error) {
    return new Refusal(record.topic, record.partition, record.offset, remote, TRANSFORM_FAILED,
        error.getMessage());
  }

  static Refusal of(SourceRecord record, String targetTopic, Exception error) {
    return new Refusal(record.topic, record.partition, record.offset, targetTopic,
        Errors.forException(error).name(), what(error) + ": " + error.getMessage());
  }

  /** The kind of refusal in a few words, for statuses and the dead-letter header. */
  private static String what(Exception error) {
    if (error instanceof RecordTooLargeException || error instanceof RecordBatchTooLargeException) {
      return "record too large for the topic";
    }
    if (error instanceof InvalidTimestampException) {
      return "timestamp refused by the topic";
    }
    if (error instanceof PolicyViolationException) {
      return "refused by a broker policy";
    }
    if (error instanceof InvalidRecordException || error instanceof CorruptRecordException) {
      return "invalid record";
    }
    return "not written";
  }

  String describe() {
    if (TRANSFORM_FAILED.equals(code)) {
      return "the record from " + topic + "[" + partition + "] offset " + offset + ": " + message;
    }
    return targetTopic + "[" + partition + "] refused the record from source offset " + offset
        + ": " + message;
  }

  /** The record's own headers followed by the dead-letter headers. */
  Header[] deadLetterHeaders(String flow, Header[] own) {
    List<Header> out = new ArrayList<>(List.of(own));
    add(out, "flow", flow);
    add(out, "topic", topic);
    add(out, "partition", Integer.toString(partition));
    add(out, "offset", Long.toString(offset));
    add(out, "target.topic", targetTopic);
    add(out, "code", code);
    add(out, "message", message);
    add(out, "timestamp", Long.toString(System.currentTimeMillis()));
    return out.toArray(new Header[0]);
  }

  private static void add(List<Header> headers, String name, String value) {
    headers.add(new RecordHeader("mirrorline.error." + name, value.getBytes(StandardCharsets.UTF_8)));
  }
}
