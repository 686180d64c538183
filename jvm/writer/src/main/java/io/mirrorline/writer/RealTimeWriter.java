package io.mirrorline.writer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.ForeachWriter;
import org.apache.spark.sql.Row;

/**
 * The sink of a real-time query: each long-running task sends its records as they
 * arrive, at least once, and reports what the target settled at every heartbeat.
 *
 * <p>Spark opens one writer per source partition and batch ({@code epochId} is the
 * batch), hands it every record of the batch as it is read, and closes it at the
 * batch's end. The tasks of an executor send through one shared producer
 * ({@link ProducerPool#shared}).
 *
 * <p>Every {@code reportMs} (the executors' heartbeat interval, so that each
 * heartbeat carries a fresh report), whether records arrive or not, the task puts its
 * report in {@link BatchResults} in place of the one before: the batch, the
 * task's source partition index, its attempt, a sequence number, and the
 * summaries of what the target has settled so far ({@link AtLeastOnceWriter#report}).
 * Executor heartbeats carry the latest report to the driver while the task runs
 * ({@link RealTimeSink}), so the driver saves offset syncs and progress within
 * about a heartbeat of the records' acknowledgement, however long the batch.
 * Reports are cumulative: a lost or late one is made good by the next.
 *
 * <p>A task whose copies failed stops reporting progress: its report says why
 * instead ({@code failed}), and the driver stops the query at once, since the task
 * itself fails only when its next record comes or its batch ends.
 *
 * <p>Closing waits for the task's own delivery reports, handles refusals as the
 * micro-batch writer does ({@link AtLeastOnceWriter}), and puts the final report,
 * marked so, which Spark merges into the driver's copy when the task succeeds. A
 * failure discards the shared producer and fails the task, which stops the query;
 * the driver then starts again from its saved progress.
 */
final class RealTimeWriter extends ForeachWriter<Row> {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ScheduledExecutorService REPORTS =
      Executors.newSingleThreadScheduledExecutor(task -> {
        Thread thread = new Thread(task, "mirrorline real-time reports");
        thread.setDaemon(true);
        return thread;
      });
  private final WriteSpec spec;
  private final SourceRecord.Columns columns;
  private final BatchResults results;
  private final long reportMs;
  // Held by the task thread per record, and by the report; a report that finds the
  // task busy (a send waiting for room in the producer's buffer) waits for the next round.
  private transient ReentrantLock lock;
  private transient AtLeastOnceWriter writer; // null once closed
  private transient ScheduledFuture<?> reporting;
  private transient long batch;
  private transient long task;
  private transient int attempt;
  private transient long reports;
  private transient String failure; // why the task stopped, once a report found it had

  RealTimeWriter(WriteSpec spec, SourceRecord.Columns columns, BatchResults results,
      long reportMs) {
    this.spec = spec;
    this.columns = columns;
    this.results = results;
    this.reportMs = reportMs;
  }

  @Override
  public boolean open(long partitionId, long epochId) {
    lock = new ReentrantLock();
    failure = null;
    batch = epochId;
    task = partitionId;
    TaskContext context = TaskContext.get();
    attempt = context == null ? 0 : context.attemptNumber();
    writer = new AtLeastOnceWriter(spec);
    writer.open();
    reporting = REPORTS.scheduleAtFixedRate(this::report, reportMs, reportMs,
        TimeUnit.MILLISECONDS);
    return true;
  }

  @Override
  public void process(Row row) {
    lock.lock();
    try {
      writer.accept(columns.read(row));
    } finally {
      lock.unlock();
    }
  }

  private void report() {
    if (!lock.tryLock()) {
      return;
    }
    try {
      if (writer != null && failure == null) {
        results.report(row(writer.report(System.currentTimeMillis()), false, null));
      }
    } catch (RuntimeException e) {
      // An exception would end this schedule without a word: the report says it instead.
      failure = e.getMessage() != null ? e.getMessage() : e.toString();
      results.report(row(List.of(), false, failure));
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void close(Throwable error) {
    reporting.cancel(false);
    AtLeastOnceWriter closing;
    lock.lock();
    try {
      closing = writer;
      writer = null; // a report from now on finds nothing to report
    } finally {
      lock.unlock();
    }
    if (error != null) {
      closing.abort();
      return;
    }
    long now = System.currentTimeMillis();
    List<Map<String, Object>> logs = new ArrayList<>();
    for (PartitionLog log : closing.finish()) {
      logs.add(log.summary(now));
    }
    results.report(row(logs, true, null));
  }

  private String row(List<Map<String, Object>> logs, boolean last, String failed) {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("batch", batch);
    row.put("task", task);
    row.put("attempt", attempt);
    row.put("seq", ++reports);
    row.put("final", last);
    row.put("logs", logs);
    if (failed != null) {
      row.put("failed", failed);
    }
    try {
      return JSON.writeValueAsString(row);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }
}
