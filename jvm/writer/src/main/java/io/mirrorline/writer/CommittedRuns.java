package io.mirrorline.writer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Utils;

/**
 * The offset mapping of records an earlier attempt committed, for the replay that skips them.
 *
 * <p>A task whose partition's committed position lies past the start of its input writes
 * nothing for the records before it. The driver may never have heard of the attempt that
 * wrote them: that attempt's task failed after its commit (another partition's transaction
 * failed, a retried Spark task), or its transaction was still open when a driver taking
 * the flow over read the progress, so the progress it started from was older. Reporting
 * nothing for them would leave those records without offset runs: no exact translation
 * and no verification for them.
 *
 * <p>Their mapping is in the progress record that attempt committed, which is the
 * partition's latest: the transactional id admits one writer at a time, and a skip
 * happens before this attempt writes anything. The replay reads that record back and
 * reports its runs (those within the skipped range) as its own; its own progress record
 * carries them on, so a chain of such replays loses nothing either.
 *
 * <p>The record is found from the end of the progress topic's partition for its key,
 * reading back in windows: after a failure little is written there, so the first window
 * nearly always holds it. All of this happens only when something was skipped.
 */
final class CommittedRuns {
  static final int WINDOW = 1000;
  private static final ObjectMapper JSON = new ObjectMapper();

  private CommittedRuns() {}

  /** The committed runs of source offsets [{@code from}, {@code until}); empty if none. */
  static List<long[]> within(WriteSpec.ExactlyOnce spec, String flow, String topic, int partition,
      long from, long until, Duration timeout) {
    byte[] key = ProgressRecords.key(flow, topic, partition);
    KafkaConsumer<byte[], byte[]> reader = Positions.reader(spec);
    byte[] value;
    synchronized (reader) { // shared by the executor's tasks
      value = latest(reader, spec.progressTopic, key, System.nanoTime() + timeout.toNanos());
    }
    return value == null ? List.of() : clip(runsOf(value), from, until);
  }

  private static byte[] latest(KafkaConsumer<byte[], byte[]> reader, String progressTopic,
      byte[] key, long deadline) {
    Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
    int partitions = reader.partitionsFor(progressTopic, left).size();
    // Where the writer's producer put it: Kafka's partitioner for a keyed record.
    TopicPartition tp =
        new TopicPartition(progressTopic, Utils.toPositive(Utils.murmur2(key)) % partitions);
    reader.assign(List.of(tp));
    long start = reader.beginningOffsets(List.of(tp), left).get(tp);
    long end = reader.endOffsets(List.of(tp), left).get(tp); // read_committed: the stable end
    for (long high = end; high > start; high = Math.max(start, high - WINDOW)) {
      long low = Math.max(start, high - WINDOW);
      reader.seek(tp, low);
      ConsumerRecord<byte[], byte[]> found = null;
      while (reader.position(tp, left) < high) {
        if (System.nanoTime() > deadline) {
          throw new DeliveryFailed("timed out reading " + progressTopic + " " + tp.partition()
              + " for the offset mapping an earlier attempt committed");
        }
        for (ConsumerRecord<byte[], byte[]> r : reader.poll(Duration.ofMillis(100)).records(tp)) {
          if (r.offset() < high && Arrays.equals(r.key(), key)) {
            found = r;
          }
        }
      }
      if (found != null) {
        return found.value(); // null: the partition's progress was deleted
      }
    }
    return null;
  }

  /** The runs {@code [source, target, count]} of a progress record's value. */
  static List<long[]> runsOf(byte[] value) {
    List<long[]> runs = new ArrayList<>();
    try {
      for (JsonNode run : JSON.readTree(value).path("runs")) {
        runs.add(new long[] {run.get(0).asLong(), run.get(1).asLong(), run.get(2).asLong()});
      }
    } catch (IOException | NullPointerException e) {
      return List.of(); // not a progress record this version wrote: no mapping from it
    }
    return runs;
  }

  /** The parts of {@code runs} within source offsets [{@code from}, {@code until}). */
  static List<long[]> clip(List<long[]> runs, long from, long until) {
    List<long[]> out = new ArrayList<>();
    for (long[] run : runs) {
      long low = Math.max(run[0], from);
      long high = Math.min(run[0] + run[2], until);
      if (low < high) {
        out.add(new long[] {low, run[1] + (low - run[0]), high - low});
      }
    }
    return out;
  }
}
