package io.mirrorline.writer;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * Readies the driver's JVM for a flow's first micro-batch while Spark plans it (local
 * mode, where the tasks run in the driver's JVM); called by the driver.
 *
 * <p>Otherwise the first batch's tasks begin by making the executor's clients, on a
 * JVM that has not loaded their classes yet: the flow's shared producer (connection,
 * metadata, producer id) and a consumer per source partition (connection, first
 * fetch), all before the first record is copied. Started with the query, that work
 * overlaps Spark's planning of the first batch instead: the producer waits in the
 * pool ({@link ProducerPool#shared}), each partition's consumer among the reader's
 * idle cursors ({@link SourceReader#prepare}), positioned where the query starts and
 * holding its first fetch. Nothing depends on it: a task that comes first makes its
 * own clients. The driver calls {@link #run} on a thread of its own and only logs a
 * failure.
 */
public final class Prepare {
  private static final ObjectMapper JSON = new ObjectMapper();

  private Prepare() {}

  /**
   * Prepare: {@code specJson} as the first batch is given it, {@code startingJson} the
   * query's starting offsets ({topic: {partition: offset}}; Spark's markers for
   * earliest and latest are left to the batch).
   */
  public static void run(String specJson, String startingJson) throws IOException {
    WriteSpec spec = WriteSpec.parse(specJson);
    Map<String, Map<String, Long>> starting =
        JSON.readValue(startingJson, new TypeReference<>() {});
    if (spec.exactlyOnce == null) { // exactly-once tasks have a producer per partition
      ProducerPool.Lease lease = ProducerPool.shared(spec.producer);
      try {
        for (String remote : spec.remoteTopics.values()) {
          lease.producer().partitionsFor(remote);
        }
      } finally {
        lease.giveBack();
      }
    }
    for (Map.Entry<String, Map<String, Long>> topic : starting.entrySet()) {
      for (Map.Entry<String, Long> offset : topic.getValue().entrySet()) {
        if (offset.getValue() >= 0) {
          TopicPartition partition =
              new TopicPartition(topic.getKey(), Integer.parseInt(offset.getKey()));
          SourceReader.prepare(spec.flow, spec.source, partition, offset.getValue());
        }
      }
    }
  }
}
