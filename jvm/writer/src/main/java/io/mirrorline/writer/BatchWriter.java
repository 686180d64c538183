package io.mirrorline.writer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import scala.Tuple2;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction2;

/**
 * Writes one micro-batch of a flow to the target cluster; called by the driver.
 *
 * <p>Mirrorline's Python driver calls {@link #write} from its {@code foreachBatch}
 * function with the micro-batch of Spark's Kafka source and a JSON
 * {@link WriteSpec}. The batch's offset ranges come from its plan
 * ({@link BatchRanges}); each Spark task, placed where Spark's Kafka source would
 * have placed it, reads its share of them with consumers kept on its executor ({@link SourceReader}) and sends the records with a Kafka
 * producer kept there too ({@link AtLeastOnceWriter}, or {@link ExactlyOnceWriter}
 * in exactly-once mode). The records never leave the JVM. Each task returns one
 * JSON summary per source partition (counts, offset ranges on both sides, record
 * age, refusals, the exact offset mapping as runs); the call returns them as one
 * JSON array, the rows of {@code engine/batch_writer.PartitionResult}.
 */
public final class BatchWriter {
  private BatchWriter() {}

  /**
   * Write the batch; its Spark job runs in {@code jobGroup}, so that the driver can
   * cancel a batch it abandons (a target that stopped answering) and free the
   * executors at once: cancelling interrupts the tasks, which then drop what their
   * producers still hold (see {@link Deliveries}).
   */
  public static String write(Dataset<Row> batch, String specJson, String jobGroup) {
    WriteSpec spec = WriteSpec.parse(specJson);
    List<List<SourceRange>> tasks = tasks(BatchRanges.of(batch), spec.tasksMax, spec.taskSlots);
    if (tasks.isEmpty()) {
      return "[]";
    }
    SparkContext context = batch.sparkSession().sparkContext();
    context.setJobGroup(jobGroup, "mirrorline " + spec.flow, true);
    try {
      List<Tuple2<List<SourceRange>, Seq<String>>> placed = new ArrayList<>(tasks.size());
      for (List<SourceRange> task : tasks) {
        String executor = task.get(0).executor;
        placed.add(new Tuple2<>(task, CollectionConverters.asScala(
            executor == null ? List.<String>of() : List.of(executor)).toSeq()));
      }
      ClassTag<List<SourceRange>> tag = ClassTag$.MODULE$.apply(List.class);
      RDD<List<SourceRange>> shares = context.makeRDD(CollectionConverters.asScala(placed).toSeq(), tag);
      String[][] results = (String[][]) context.runJob(shares, new Task(spec),
          ClassTag$.MODULE$.apply(String[].class));
      List<String> rows = new ArrayList<>();
      for (String[] task : results) {
        rows.addAll(Arrays.asList(task));
      }
      return "[" + String.join(",", rows) + "]";
    } finally {
      context.clearJobGroup();
    }
  }

  /**
   * The ranges shared out as a few tasks per executor: at most {@code slots} (the tasks an
   * executor runs at once; 0: no bound) for the ranges Spark prefers on one executor, and
   * at most {@code tasksMax} in all (0: no bound). Tasks beyond an executor's slots would
   * run in waves, each wave waiting for its first fetches from the source: a round trip
   * per wave to a far cluster. A task keeps a fetch in flight for each of its ranges
   * ({@link SourceReader}), so fewer, larger tasks wait once. When there are more
   * executors than {@code tasksMax}, the ranges are dealt out over {@code tasksMax} tasks.
   */
  static List<List<SourceRange>> tasks(List<SourceRange> ranges, int tasksMax, int slots) {
    Map<String, List<SourceRange>> byExecutor = new LinkedHashMap<>();
    for (SourceRange range : ranges) {
      byExecutor.computeIfAbsent(range.executor == null ? "" : range.executor,
          e -> new ArrayList<>()).add(range);
    }
    int most = tasksMax > 0 ? tasksMax : Integer.MAX_VALUE;
    if (byExecutor.size() > most) {
      return dealt(ranges, most);
    }
    int perExecutor = Math.min(slots > 0 ? slots : Integer.MAX_VALUE,
        Math.max(1, most / Math.max(1, byExecutor.size())));
    List<List<SourceRange>> tasks = new ArrayList<>();
    for (List<SourceRange> share : byExecutor.values()) {
      tasks.addAll(dealt(share, perExecutor));
    }
    return tasks;
  }

  /** {@code ranges} dealt out in turn over at most {@code n} tasks. */
  private static List<List<SourceRange>> dealt(List<SourceRange> ranges, int n) {
    int count = Math.min(n, ranges.size());
    List<List<SourceRange>> tasks = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      tasks.add(new ArrayList<>());
    }
    for (int i = 0; i < ranges.size(); i++) {
      tasks.get(i % count).add(ranges.get(i));
    }
    return tasks;
  }

  /**
   * What one Spark task runs over its ranges.
   *
   * <p>A named function, not a lambda: Spark inspects a lambda's bytecode (its
   * closure cleaner reads the defining class with ASM) at every job, which cost each
   * micro-batch CPU and kept the JIT compiler busy with code off the data path.
   */
  private static final class Task
      extends AbstractFunction2<TaskContext, scala.collection.Iterator<List<SourceRange>>, String[]>
      implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final ObjectMapper JSON = new ObjectMapper();
    private final WriteSpec spec;

    Task(WriteSpec spec) {
      this.spec = spec;
    }

    @Override
    public String[] apply(TaskContext context, scala.collection.Iterator<List<SourceRange>> share) {
      List<SourceRange> ranges = new ArrayList<>();
      CollectionConverters.asJava(share).forEachRemaining(ranges::addAll);
      Collection<PartitionLog> logs;
      boolean exactlyOnce = spec.exactlyOnce != null;
      // Exactly-once writes a partition's records in one transaction: they come together.
      SourceReader.Order order =
          exactlyOnce ? SourceReader.Order.ONE_AFTER_ANOTHER : SourceReader.Order.IN_TURNS;
      try (SourceReader.Records records = SourceReader.read(spec.flow, spec.source, ranges, order)) {
        logs = exactlyOnce
            ? new ExactlyOnceWriter(spec).write(records)
            : new AtLeastOnceWriter(spec).write(records);
      }
      long now = System.currentTimeMillis();
      String[] out = new String[logs.size()];
      int i = 0;
      for (PartitionLog log : logs) {
        try {
          out[i++] = JSON.writeValueAsString(log.summary(now));
        } catch (JsonProcessingException e) {
          throw new IllegalStateException("cannot write a partition summary as JSON", e);
        }
      }
      return out;
    }
  }
}
