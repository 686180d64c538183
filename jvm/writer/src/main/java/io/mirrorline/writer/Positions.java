package io.mirrorline.writer;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads exactly-once partitions' committed positions: the committed offset of the
 * flow's position group on the remote topic-partition, with the source position in
 * its metadata (see {@link ExactlyOnceWriter}).
 *
 * <p>One consumer per executor JVM and group; it never subscribes or joins the
 * group. It reads with {@code isolation.level = read_committed}, which makes the
 * broker answer only with stable offsets (no transaction still open on them).
 */
final class Positions {
  /** A partition's committed position: next source offset (-1: none) and target offset. */
  static final class Position {
    final long nextSourceOffset;
    final long targetOffset;

    Position(long nextSourceOffset, long targetOffset) {
      this.nextSourceOffset = nextSourceOffset;
      this.targetOffset = targetOffset;
    }
  }

  private static final Map<String, KafkaConsumer<byte[], byte[]>> READERS = new HashMap<>();

  private Positions() {}

  static Position read(WriteSpec.ExactlyOnce spec, String remoteTopic, int partition, Duration timeout) {
    KafkaConsumer<byte[], byte[]> reader = reader(spec);
    TopicPartition tp = new TopicPartition(remoteTopic, partition);
    OffsetAndMetadata found;
    synchronized (reader) { // a consumer is not thread-safe; tasks of one executor share it
      found = reader.committed(Set.of(tp), timeout).get(tp);
    }
    if (found == null) {
      return new Position(-1, 0);
    }
    return new Position(ProgressRecords.nextOffsetOf(found.metadata()), found.offset());
  }

  /** The executor's read_committed consumer of the target for {@code spec}; lock it to use it. */
  static KafkaConsumer<byte[], byte[]> reader(WriteSpec.ExactlyOnce spec) {
    Map<String, String> settings = new TreeMap<>(spec.consumer);
    settings.put("group.id", spec.positionGroup);
    settings.put("enable.auto.commit", "false");
    settings.put("isolation.level", "read_committed");
    String key = settings.toString();
    synchronized (READERS) {
      return READERS.computeIfAbsent(key, k -> {
        Properties props = new Properties();
        props.putAll(settings);
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        return new KafkaConsumer<>(props);
      });
    }
  }
}
