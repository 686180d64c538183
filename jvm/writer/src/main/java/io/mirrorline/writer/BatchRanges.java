package io.mirrorline.writer;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import org.apache.spark.Dependency;
import org.apache.spark.Partition;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.execution.datasources.v2.DataSourceRDD;
import org.apache.spark.sql.execution.datasources.v2.DataSourceRDDPartition;
import org.apache.spark.sql.kafka010.KafkaBatchInputPartition;
import org.apache.spark.sql.kafka010.KafkaOffsetRange;
import org.apache.spark.sql.kafka010.KafkaSourceRDD;
import org.apache.spark.sql.kafka010.KafkaSourceRDDPartition;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The offset ranges of a micro-batch, as Spark's Kafka source planned them.
 *
 * <p>The query keeps what Spark's streaming engine does well: choosing each batch's
 * end offsets (the trigger, {@code maxOffsetsPerTrigger}), placing a partition on
 * the same executor batch after batch, and the query's life cycle. The writer's
 * tasks read the planned ranges themselves ({@link SourceReader}) instead of
 * through the source's partition readers; nothing of the batch's own data is read.
 * The ranges are the partitions of the batch's Kafka scan, found by walking the
 * batch's RDD lineage down to it (a batch read of the Kafka source works the same).
 */
final class BatchRanges {
  private BatchRanges() {}

  /** Every non-empty range of the batch, with the executor Spark prefers for it. */
  static List<SourceRange> of(Dataset<Row> batch) {
    Deque<RDD<?>> todo = new ArrayDeque<>();
    todo.add(batch.queryExecution().toRdd());
    while (!todo.isEmpty()) {
      RDD<?> rdd = todo.poll();
      if (rdd instanceof DataSourceRDD || rdd instanceof KafkaSourceRDD) {
        return ranges(rdd.partitions());
      }
      for (Dependency<?> dependency : CollectionConverters.asJava(rdd.dependencies())) {
        todo.add(dependency.rdd());
      }
    }
    throw new IllegalStateException(
        "the micro-batch has no Kafka scan in its lineage (unsupported Spark version?)");
  }

  private static List<SourceRange> ranges(Partition[] partitions) {
    List<SourceRange> ranges = new ArrayList<>();
    for (Partition partition : partitions) {
      KafkaOffsetRange range = offsetRange(partition);
      if (range != null && range.untilOffset() > range.fromOffset()) {
        ranges.add(new SourceRange(
            range.topic(),
            range.partition(),
            range.fromOffset(),
            range.untilOffset(),
            range.preferredLoc().isDefined() ? range.preferredLoc().get() : null));
      }
    }
    return ranges;
  }

  /** A partition's range: of a streaming scan (Kafka's v2 source) or of a batch read. */
  private static KafkaOffsetRange offsetRange(Partition partition) {
    if (partition instanceof KafkaSourceRDDPartition) {
      return ((KafkaSourceRDDPartition) partition).offsetRange();
    }
    scala.Option<InputPartition> input = ((DataSourceRDDPartition) partition).inputPartition();
    return input.isEmpty() ? null : ((KafkaBatchInputPartition) input.get()).offsetRange();
  }
}
