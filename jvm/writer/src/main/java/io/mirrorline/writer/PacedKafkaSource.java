package io.mirrorline.writer;

import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReportsSourceMetrics;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.kafka010.KafkaSourceProvider;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Spark's Kafka source with a read limit that the driver changes between micro-batches.
 *
 * <p>Spark asks a source for its read limit once, when the query starts, and passes
 * that limit to every batch; the Kafka source's own limit is its fixed
 * {@code maxOffsetsPerTrigger}. Mirrorline sizes each micro-batch by time instead
 * ({@code engine/batch_pace.py} decides, in Python, from what the last batch moved),
 * so this source is Spark's Kafka source, planning and all, except that each batch's
 * end offsets are chosen under the most records the driver last set for the query
 * ({@link #pace}). Nothing here runs per record.
 *
 * <p>Used as {@code format("io.mirrorline.writer.PacedKafkaSource")} with the Kafka
 * source's options and {@code mirrorline.pace}, the name the driver paces it by.
 */
public final class PacedKafkaSource implements TableProvider {
  static final String PACE_OPTION = "mirrorline.pace";
  private static final Map<String, Long> LIMITS = new ConcurrentHashMap<>();

  private final KafkaSourceProvider kafka = new KafkaSourceProvider();

  /** The most source records the next micro-batches of query {@code name} read. */
  public static void pace(String name, long records) {
    if (records < 1) {
      throw new IllegalArgumentException("a micro-batch reads at least one record, got " + records);
    }
    LIMITS.put(name, records);
  }

  /** Forget query {@code name}'s limit (it stopped). */
  public static void forget(String name) {
    LIMITS.remove(name);
  }

  static ReadLimit limitOf(String name) {
    Long records = LIMITS.get(name);
    if (records == null) {
      throw new IllegalStateException("no micro-batch size set for query " + name);
    }
    return ReadLimit.maxRows(records);
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return kafka.inferSchema(options);
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new PacedTable(kafka.getTable(schema, partitioning, properties));
  }

  /** The Kafka table, read in micro-batches only. */
  private static final class PacedTable implements Table, SupportsRead {
    private final Table kafka;

    PacedTable(Table kafka) {
      this.kafka = kafka;
    }

    @Override
    public String name() {
      return "paced " + kafka.name();
    }

    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
      return kafka.schema();
    }

    @Override
    public Set<TableCapability> capabilities() {
      return Set.of(TableCapability.MICRO_BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      String name = options.get(PACE_OPTION);
      if (name == null) {
        throw new IllegalArgumentException("option " + PACE_OPTION + " is required");
      }
      ScanBuilder builder = ((SupportsRead) kafka).newScanBuilder(options);
      return () -> new PacedScan(builder.build(), name);
    }
  }

  private static final class PacedScan implements Scan {
    private final Scan kafka;
    private final String name;

    PacedScan(Scan kafka, String name) {
      this.kafka = kafka;
      this.name = name;
    }

    @Override
    public StructType readSchema() {
      return kafka.readSchema();
    }

    @Override
    public String description() {
      return "paced " + kafka.description();
    }

    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
      return new PacedStream(kafka.toMicroBatchStream(checkpointLocation), name);
    }
  }

  /** The Kafka source's stream; only the read limit of each batch is the driver's. */
  private static final class PacedStream
      implements MicroBatchStream, SupportsAdmissionControl, ReportsSourceMetrics {
    private final MicroBatchStream kafka;
    private final String name;

    PacedStream(MicroBatchStream kafka, String name) {
      this.kafka = kafka;
      this.name = name;
    }

    @Override
    public ReadLimit getDefaultReadLimit() {
      return limitOf(name);
    }

    @Override
    public Offset latestOffset(Offset start, ReadLimit ignored) {
      return ((SupportsAdmissionControl) kafka).latestOffset(start, limitOf(name));
    }

    @Override
    public Offset reportLatestOffset() {
      return ((SupportsAdmissionControl) kafka).reportLatestOffset();
    }

    @Override
    public Offset latestOffset() {
      return kafka.latestOffset();
    }

    @Override
    public InputPartition[] planInputPartitions(Offset start, Offset end) {
      return kafka.planInputPartitions(start, end);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
      return kafka.createReaderFactory();
    }

    @Override
    public Offset initialOffset() {
      return kafka.initialOffset();
    }

    @Override
    public Offset deserializeOffset(String json) {
      return kafka.deserializeOffset(json);
    }

    @Override
    public void commit(Offset end) {
      kafka.commit(end);
    }

    @Override
    public void stop() {
      kafka.stop();
    }

    @Override
    public Map<String, String> metrics(Optional<Offset> latestConsumedOffset) {
      return ((ReportsSourceMetrics) kafka).metrics(latestConsumedOffset);
    }

    @Override
    public String toString() {
      return "paced " + kafka;
    }
  }
}
