package io.mirrorline.writer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.ForeachWriter;
import org.apache.spark.sql.Row;

/**
 * The sink of a real-time query: each long-running task sends its records as they
 * arrive, at least once.
 *
 * <p>Spark opens one writer per source partition and batch ({@code epochId} is the
 * batch), hands it every record of the batch as it is read, and closes it at the
 * batch's end. The tasks of an executor send through one shared producer
 * ({@link ProducerPool#shared}). Closing waits for the task's own delivery reports,
 * handles refusals as the micro-batch writer does ({@link AtLeastOnceWriter}), and
 * adds one row to {@link BatchResults}: the batch, the task's source partition
 * index, and the summaries the micro-batch writer would return. A failure discards
 * the shared producer and fails the task, which stops the query; the driver then
 * starts again from its saved progress.
 */
final class RealTimeWriter extends ForeachWriter<Row> {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();
  private final WriteSpec spec;
  private final SourceRecord.Columns columns;
  private final BatchResults results;
  private transient AtLeastOnceWriter writer;
  private transient long batch;
  private transient long task;

  RealTimeWriter(WriteSpec spec, SourceRecord.Columns columns, BatchResults results) {
    this.spec = spec;
    this.columns = columns;
    this.results = results;
  }

  @Override
  public boolean open(long partitionId, long epochId) {
    batch = epochId;
    task = partitionId;
    writer = new AtLeastOnceWriter(spec);
    writer.open();
    return true;
  }

  @Override
  public void process(Row row) {
    writer.accept(columns.read(row));
  }

  @Override
  public void close(Throwable error) {
    if (error != null) {
      writer.abort();
      return;
    }
    long now = System.currentTimeMillis();
    List<Map<String, Object>> logs = new ArrayList<>();
    for (PartitionLog log : writer.finish()) {
      logs.add(log.summary(now));
    }
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("batch", batch);
    row.put("task", task);
    row.put("logs", logs);
    try {
      results.add(JSON.writeValueAsString(row));
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }
}
