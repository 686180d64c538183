package io.mirrorline.writer;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/** A task's logs by source partition, in the order the partitions first appeared. */
final class PartitionLogs {
  private final Map<TopicPartition, PartitionLog> logs = new LinkedHashMap<>();
  private PartitionLog last; // rows come partition by partition: most lookups hit this

  /** The record's partition log, started at this record when it is the partition's first. */
  PartitionLog of(SourceRecord record) {
    PartitionLog hit = last;
    if (hit != null && hit.partition == record.partition && hit.topic.equals(record.topic)) {
      return hit;
    }
    hit = logs.computeIfAbsent(new TopicPartition(record.topic, record.partition),
        tp -> new PartitionLog(record.topic, record.partition, record.offset));
    last = hit;
    return hit;
  }

  Collection<PartitionLog> all() {
    return logs.values();
  }
}
