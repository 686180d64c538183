package io.mirrorline.writer;

import java.util.concurrent.TimeoutException;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;

/**
 * Starts a flow's query in Spark's real-time mode; called by the driver.
 *
 * <p>Real-time mode runs one long-running task per source partition for each
 * batch of {@code batchMs}: records are written as soon as they are read, and the
 * batch only sets how often the tasks report what they wrote. Spark allows no
 * Python and no {@code foreachBatch} in this mode, so the query is built here,
 * with {@link RealTimeWriter} as its foreach sink, and the driver collects the
 * tasks' reports with {@link #takeResults}. At-least-once only: a batch has no
 * transaction of its own.
 */
public final class RealTimeSink {
  private final StreamingQuery query;
  private final BatchResults results;

  private RealTimeSink(StreamingQuery query, BatchResults results) {
    this.query = query;
    this.results = results;
  }

  /** Start writing {@code records} (Spark's Kafka source) as {@code specJson} describes. */
  public static RealTimeSink start(Dataset<Row> records, String specJson, String queryName,
      String checkpoint, long batchMs) throws TimeoutException {
    WriteSpec spec = WriteSpec.parse(specJson);
    if (spec.exactlyOnce != null) {
      throw new IllegalArgumentException("flow " + spec.flow
          + ": real-time mode writes at least once; exactly-once needs micro-batches");
    }
    BatchResults results = new BatchResults();
    records.sparkSession().sparkContext().register(results);
    StreamingQuery query = records.writeStream()
        .queryName(queryName)
        .option("checkpointLocation", checkpoint)
        .outputMode("update")
        .trigger(Trigger.RealTime(batchMs))
        .foreach(new RealTimeWriter(spec, new SourceRecord.Columns(records.schema()), results))
        .start();
    return new RealTimeSink(query, results);
  }

  public StreamingQuery query() {
    return query;
  }

  /** The rows of the tasks finished since the last call, as one JSON array. */
  public String takeResults() {
    return "[" + String.join(",", results.drain()) + "]";
  }
}
