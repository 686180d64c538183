package io.mirrorline.writer;

import java.io.Serializable;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.spark.sql.Row;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.spark.sql.types.StructType;

/** One source record, as the batch's reader or Spark's real-time source hands it over. */
final class SourceRecord {
  private static final Header[] NO_HEADERS = new Header[0];
  final String topic;
  final int partition;
  final long offset;
  final byte[] key;
  final byte[] value;
  final long timestampMs;
  final Header[] headers;

  SourceRecord(String topic, int partition, long offset, byte[] key, byte[] value, long timestampMs,
      Header[] headers) {
    this.topic = topic;
    this.partition = partition;
    this.offset = offset;
    this.key = key;
    this.value = value;
    this.timestampMs = timestampMs;
    this.headers = headers;
  }

  /** A record as the source's consumer hands it over. */
  static SourceRecord of(ConsumerRecord<byte[], byte[]> r) {
    Header[] headers = r.headers().toArray();
    return new SourceRecord(r.topic(), r.partition(), r.offset(), r.key(), r.value(), r.timestamp(),
        headers.length == 0 ? NO_HEADERS : headers);
  }

  /** Key and value bytes: what the throughput counters report. */
  int size() {
    return (key == null ? 0 : key.length) + (value == null ? 0 : value.length);
  }

  /**
   * Where the Kafka source's columns are in its rows.
   *
   * <p>Resolved by name on the driver, so a projection or a Spark version that
   * orders them differently cannot mix them up.
   */
  static final class Columns implements Serializable {
    private static final long serialVersionUID = 1L;
    final int key;
    final int value;
    final int topic;
    final int partition;
    final int offset;
    final int timestamp;
    final int headers; // -1 without includeHeaders
    Columns(StructType schema) {
      key = schema.fieldIndex("key");
      value = schema.fieldIndex("value");
      topic = schema.fieldIndex("topic");
      partition = schema.fieldIndex("partition");
      offset = schema.fieldIndex("offset");
      timestamp = schema.fieldIndex("timestamp");
      headers = schema.getFieldIndex("headers").isDefined() ? schema.fieldIndex("headers") : -1;
    }

    /** A record from an external row, as Spark's foreach sink hands rows over. */
    SourceRecord read(Row row) {
      return new SourceRecord(
          row.getString(topic),
          row.getInt(partition),
          row.getLong(offset),
          row.isNullAt(key) ? null : (byte[]) row.get(key),
          row.isNullAt(value) ? null : (byte[]) row.get(value),
          row.isNullAt(timestamp) ? -1L : epochMillis(row.get(timestamp)),
          readHeaders(row));
    }

    /** Spark gives timestamps as java.sql or, with its Java 8 API on, java.time values. */
    private static long epochMillis(Object timestamp) {
      return timestamp instanceof Instant
          ? ((Instant) timestamp).toEpochMilli()
          : ((Timestamp) timestamp).getTime();
    }

    private Header[] readHeaders(Row row) {
      if (headers < 0 || row.isNullAt(headers)) {
        return NO_HEADERS;
      }
      List<Row> list = row.getList(headers);
      if (list.isEmpty()) {
        return NO_HEADERS;
      }
      Header[] out = new Header[list.size()];
      for (int i = 0; i < out.length; i++) {
        Row h = list.get(i);
        out[i] = new RecordHeader(h.getString(0), h.isNullAt(1) ? null : (byte[]) h.get(1));
      }
      return out;
    }
  }
}
