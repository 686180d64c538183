package io.mirrorline.writer;

import java.io.Serializable;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/** One source record as Spark's Kafka source hands it over, copied out of Spark's row. */
final class SourceRecord {
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
    private static final Header[] NO_HEADERS = new Header[0];
    final int key;
    final int value;
    final int topic;
    final int partition;
    final int offset;
    final int timestamp;
    final int headers; // -1 without includeHeaders
    // The last topic name seen: rows of one task rarely change topic, and a
    // row's UTF8String points into a buffer Spark reuses, so a copy is kept.
    private transient UTF8String lastTopicBytes;
    private transient String lastTopic;

    Columns(StructType schema) {
      key = schema.fieldIndex("key");
      value = schema.fieldIndex("value");
      topic = schema.fieldIndex("topic");
      partition = schema.fieldIndex("partition");
      offset = schema.fieldIndex("offset");
      timestamp = schema.fieldIndex("timestamp");
      headers = schema.getFieldIndex("headers").isDefined() ? schema.fieldIndex("headers") : -1;
    }

    SourceRecord read(InternalRow row) {
      UTF8String topicBytes = row.getUTF8String(topic);
      if (lastTopicBytes == null || !lastTopicBytes.equals(topicBytes)) {
        lastTopicBytes = topicBytes.clone();
        lastTopic = topicBytes.toString();
      }
      return new SourceRecord(
          lastTopic,
          row.getInt(partition),
          row.getLong(offset),
          row.isNullAt(key) ? null : row.getBinary(key),
          row.isNullAt(value) ? null : row.getBinary(value),
          // Spark keeps Kafka's millisecond timestamps as microseconds.
          row.isNullAt(timestamp) ? -1L : Math.floorDiv(row.getLong(timestamp), 1000L),
          readHeaders(row));
    }

    /** The same from an external row, as Spark's foreach sink hands rows over. */
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

    private Header[] readHeaders(InternalRow row) {
      if (headers < 0 || row.isNullAt(headers)) {
        return NO_HEADERS;
      }
      ArrayData array = row.getArray(headers);
      int n = array.numElements();
      if (n == 0) {
        return NO_HEADERS;
      }
      Header[] out = new Header[n];
      for (int i = 0; i < n; i++) {
        InternalRow h = array.getStruct(i, 2);
        out[i] = new RecordHeader(h.getUTF8String(0).toString(), h.isNullAt(1) ? null : h.getBinary(1));
      }
      return out;
    }
  }
}
