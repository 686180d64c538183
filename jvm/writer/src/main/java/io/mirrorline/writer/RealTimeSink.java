package io.mirrorline.writer;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeoutException;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.AccumulableInfo;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorMetricsUpdate;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import scala.Tuple4;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Starts a flow's query in Spark's real-time mode; called by the driver.
 *
 * <p>Real-time mode runs one long-running task per source partition for each
 * batch of {@code batchMs}: records are written as soon as they are read. Spark
 * allows no Python and no {@code foreachBatch} in this mode, so the query is built
 * here, with {@link RealTimeWriter} as its foreach sink. The tasks' reports reach
 * the driver two ways: while a task runs, in the executor heartbeats this sink
 * listens to; when it ends, merged into the driver's {@link BatchResults}. The
 * driver takes both with {@link #takeResults}. At-least-once only: a batch has no
 * transaction of its own.
 */
public final class RealTimeSink {
  /** The tasks report as often as the executors' heartbeats carry reports (default: Spark's). */
  private static final String HEARTBEAT_INTERVAL = "spark.executor.heartbeatInterval";
  private final StreamingQuery query;
  private final BatchResults results;
  private final SparkContext context;
  private final Heartbeats heartbeats;

  private RealTimeSink(StreamingQuery query, BatchResults results, SparkContext context,
      Heartbeats heartbeats) {
    this.query = query;
    this.results = results;
    this.context = context;
    this.heartbeats = heartbeats;
  }

  /** Start writing {@code records} (Spark's Kafka source) as {@code specJson} describes. */
  public static RealTimeSink start(Dataset<Row> records, String specJson, String queryName,
      String checkpoint, long batchMs) throws TimeoutException {
    WriteSpec spec = WriteSpec.parse(specJson);
    if (spec.exactlyOnce != null) {
      throw new IllegalArgumentException("flow " + spec.flow
          + ": real-time mode writes at least once; exactly-once needs micro-batches");
    }
    SparkContext context = records.sparkSession().sparkContext();
    BatchResults results = new BatchResults();
    context.register(results);
    Heartbeats heartbeats = new Heartbeats(results.id());
    context.addSparkListener(heartbeats);
    StreamingQuery query;
    try {
      query = records.writeStream()
          .queryName(queryName)
          .option("checkpointLocation", checkpoint)
          .outputMode("update")
          .trigger(Trigger.RealTime(batchMs))
          .foreach(new RealTimeWriter(spec, new SourceRecord.Columns(records.schema()), results,
              context.conf().getTimeAsMs(HEARTBEAT_INTERVAL, "10s")))
          .start();
    } catch (TimeoutException | RuntimeException e) {
      context.removeSparkListener(heartbeats);
      throw e;
    }
    return new RealTimeSink(query, results, context, heartbeats);
  }

  public StreamingQuery query() {
    return query;
  }

  /**
   * The reports that arrived since the last call, as one JSON array: the final ones
   * of the tasks that ended, and the latest ones heartbeats carried (a task's
   * report may come more than once, and out of order; its sequence number tells).
   */
  public String takeResults() {
    List<String> rows = heartbeats.drain();
    rows.addAll(results.drain());
    return "[" + String.join(",", rows) + "]";
  }

  /** Stop listening to heartbeats (the query has stopped). */
  public void close() {
    context.removeSparkListener(heartbeats);
  }

  /** Takes this sink's task reports out of the executors' heartbeats. */
  private static final class Heartbeats extends SparkListener {
    private final long accumulator;
    private final ConcurrentLinkedQueue<String> rows = new ConcurrentLinkedQueue<>();

    Heartbeats(long accumulator) {
      this.accumulator = accumulator;
    }

    @Override
    public void onExecutorMetricsUpdate(SparkListenerExecutorMetricsUpdate update) {
      for (Tuple4<Object, Object, Object, scala.collection.immutable.Seq<AccumulableInfo>> task
          : CollectionConverters.asJava(update.accumUpdates())) {
        for (AccumulableInfo info : CollectionConverters.asJava(task._4())) {
          if (info.id() == accumulator && info.update().isDefined()
              && info.update().get() instanceof List<?> reports) {
            for (Object row : reports) {
              rows.add((String) row);
            }
          }
        }
      }
    }

    List<String> drain() {
      List<String> out = new ArrayList<>();
      for (String row = rows.poll(); row != null; row = rows.poll()) {
        out.add(row);
      }
      return out;
    }
  }
}
