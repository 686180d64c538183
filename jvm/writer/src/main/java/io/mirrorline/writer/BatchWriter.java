package io.mirrorline.writer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
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
    List<List<SourceRange>> tasks = tasks(BatchRanges.of(batch), spec.tasksMax);
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

  /** The ranges shared out over at most {@code tasksMax} tasks (0: a task per range). */
  static List<List<SourceRange>> tasks(List<SourceRange> ranges, int tasksMax) {
    int n = tasksMax > 0 ? Math.min(tasksMax, ranges.size()) : ranges.size();
    List<List<SourceRange>> tasks = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      tasks.add(new ArrayList<>());
    }
    for (int i = 0; i < ranges.size(); i++) {
      tasks.get(i % n).add(ranges.get(i));
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
      try (SourceReader.Records records = SourceReader.read(spec.flow, spec.source, ranges)) {
        logs = spec.exactlyOnce == null
            ? new AtLeastOnceWriter(spec).write(records)
            : new ExactlyOnceWriter(spec).write(records);
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
