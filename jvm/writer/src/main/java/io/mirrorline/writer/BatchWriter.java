package io.mirrorline.writer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * Writes one micro-batch of a flow to the target cluster; called by the driver.
 *
 * <p>Mirrorline's Python driver calls {@link #write} from its {@code foreachBatch}
 * function with the micro-batch of Spark's Kafka source and a JSON
 * {@link WriteSpec}. The records never leave the JVM: each Spark task reads its
 * rows as Spark holds them and sends them with a Kafka producer kept on its
 * executor ({@link AtLeastOnceWriter}, or {@link ExactlyOnceWriter} in
 * exactly-once mode). Each task returns one JSON summary per source partition
 * (counts, offset ranges on both sides, record age, refusals, the exact offset
 * mapping as runs); the
 * call returns them as one JSON array, the rows of
 * {@code engine/batch_writer.PartitionResult}.
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
    SourceRecord.Columns columns = new SourceRecord.Columns(batch.schema());
    SparkContext context = batch.sparkSession().sparkContext();
    context.setJobGroup(jobGroup, "mirrorline " + spec.flow, true);
    try {
      List<String> rows = batch.queryExecution().toRdd().toJavaRDD()
          .mapPartitions(new Task(spec, columns))
          .collect();
      return "[" + String.join(",", rows) + "]";
    } finally {
      context.clearJobGroup();
    }
  }

  /** What one Spark task runs over its rows. */
  private static final class Task implements FlatMapFunction<Iterator<InternalRow>, String> {
    private static final long serialVersionUID = 1L;
    private static final ObjectMapper JSON = new ObjectMapper();
    private final WriteSpec spec;
    private final SourceRecord.Columns columns;

    Task(WriteSpec spec, SourceRecord.Columns columns) {
      this.spec = spec;
      this.columns = columns;
    }

    @Override
    public Iterator<String> call(Iterator<InternalRow> rows) throws JsonProcessingException {
      Collection<PartitionLog> logs = spec.exactlyOnce == null
          ? new AtLeastOnceWriter(spec).write(rows, columns)
          : new ExactlyOnceWriter(spec).write(rows, columns);
      long now = System.currentTimeMillis();
      List<String> out = new ArrayList<>(logs.size());
      for (PartitionLog log : logs) {
        out.add(JSON.writeValueAsString(log.summary(now)));
      }
      return out.iterator();
    }
  }
}
