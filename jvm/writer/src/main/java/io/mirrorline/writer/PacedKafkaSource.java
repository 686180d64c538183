package io.mirrorline.writer;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
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
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.ReportsSourceMetrics;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.kafka010.KafkaSourceProvider;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Spark's Kafka source, with each micro-batch's end offsets chosen by Mirrorline.
 *
 * <p>Spark asks a source for its read limit once, when the query starts, and passes
 * that limit to every batch; the Kafka source's own limit is its fixed
 * {@code maxOffsetsPerTrigger}. Mirrorline sizes each micro-batch by time instead
 * ({@code engine/batch_pace.py} decides, in Python, from what the last batch moved),
 * so this source plans each batch's end offsets under the most records the driver
 * last set for the query ({@link #pace}). It plans them from latest offsets kept
 * current beside the query ({@link LatestOffsets}) rather than asked for by each
 * batch, which would make every batch wait for the source. The rest (the offsets'
 * form, the batch's partitions and where they run) is Spark's Kafka source. Nothing
 * here runs per record.
 *
 * <p>Used as {@code format("io.mirrorline.writer.PacedKafkaSource")} with the Kafka
 * source's options ({@code assign} and {@code kafka.*} among them) and
 * {@code mirrorline.pace}, the name the driver paces it by.
 */
public final class PacedKafkaSource implements TableProvider {
  static final String PACE_OPTION = "mirrorline.pace";
  private static final Map<String, Long> LIMITS = new ConcurrentHashMap<>();
  private static final ObjectMapper JSON = new ObjectMapper();

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

  /**
   * Each partition's end offset for a batch from {@code from} that reads at most
   * {@code most} records of what is there up to {@code until}: every partition with
   * records gets a share of the limit in proportion to what it holds (at least one
   * record), so that no partition waits for the others to catch up. A partition not in
   * {@code from} is left at its {@code until} (Spark reads a new partition from its
   * start).
   */
  static Map<TopicPartition, Long> limited(
      Map<TopicPartition, Long> from, Map<TopicPartition, Long> until, long most) {
    long total = 0;
    for (Map.Entry<TopicPartition, Long> end : until.entrySet()) {
      Long begin = from.get(end.getKey());
      total += begin == null ? 0 : Math.max(0, end.getValue() - begin);
    }
    if (total <= most) {
      return until;
    }
    Map<TopicPartition, Long> out = new HashMap<>();
    for (Map.Entry<TopicPartition, Long> end : until.entrySet()) {
      Long begin = from.get(end.getKey());
      long held = begin == null ? 0 : end.getValue() - begin;
      if (held <= 0) {
        out.put(end.getKey(), begin == null ? end.getValue() : Math.max(begin, end.getValue()));
        continue;
      }
      long share = Math.max(1, (long) Math.floor((double) most * held / total));
      out.put(end.getKey(), begin + Math.min(held, share));
    }
    return out;
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
      Source source = Source.of(options);
      return () -> new PacedScan(builder.build(), name, source);
    }
  }

  private static final class PacedScan implements Scan {
    private final Scan kafka;
    private final String name;
    private final Source source;

    PacedScan(Scan kafka, String name, Source source) {
      this.kafka = kafka;
      this.name = name;
      this.source = source;
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
      return new PacedStream(kafka.toMicroBatchStream(checkpointLocation), name, source);
    }
  }

  /** The source's partitions ({@code assign}) and its consumer's settings ({@code kafka.*}). */
  record Source(List<TopicPartition> partitions, Map<String, Object> settings) {
    static Source of(CaseInsensitiveStringMap options) {
      Map<String, Object> settings = new HashMap<>();
      options.asCaseSensitiveMap().forEach((key, value) -> {
        if (key.startsWith("kafka.")) {
          settings.put(key.substring("kafka.".length()), value);
        }
      });
      List<TopicPartition> partitions = new ArrayList<>();
      try {
        JSON.readTree(options.get("assign")).fields().forEachRemaining(topic ->
            topic.getValue().forEach(p -> partitions.add(new TopicPartition(topic.getKey(), p.asInt()))));
      } catch (JsonProcessingException | IllegalArgumentException e) {
        throw new IllegalArgumentException("a paced source needs its partitions in 'assign'", e);
      }
      return new Source(partitions, settings);
    }
  }

  /**
   * Spark's Kafka stream, with the batches' end offsets chosen here: from the latest
   * offsets kept current on the driver ({@link LatestOffsets}), under the read limit
   * the driver set ({@link #limited}).
   */
  private static final class PacedStream
      implements MicroBatchStream, SupportsAdmissionControl, ReportsSourceMetrics {
    private final MicroBatchStream kafka;
    private final String name;
    private final Source source;
    private LatestOffsets latest; // started by the first plan, on the query's thread
    private Offset reported;

    PacedStream(MicroBatchStream kafka, String name, Source source) {
      this.kafka = kafka;
      this.name = name;
      this.source = source;
    }

    @Override
    public ReadLimit getDefaultReadLimit() {
      return limitOf(name);
    }

    @Override
    public synchronized Offset latestOffset(Offset start, ReadLimit ignored) {
      if (latest == null) {
        latest = new LatestOffsets(name, source.settings(), source.partitions());
      }
      Map<TopicPartition, Long> until = latest.get();
      reported = offset(until);
      long most = ((ReadMaxRows) limitOf(name)).maxRows();
      return offset(limited(offsets(start), until, most));
    }

    @Override
    public synchronized Offset reportLatestOffset() {
      return reported;
    }

    private Offset offset(Map<TopicPartition, Long> offsets) {
      Map<String, Map<String, Long>> byTopic = new TreeMap<>();
      offsets.forEach((tp, offset) ->
          byTopic.computeIfAbsent(tp.topic(), t -> new TreeMap<>())
              .put(Integer.toString(tp.partition()), offset));
      try {
        return kafka.deserializeOffset(JSON.writeValueAsString(byTopic));
      } catch (JsonProcessingException e) {
        throw new IllegalStateException("cannot write offsets as JSON", e);
      }
    }

    private static Map<TopicPartition, Long> offsets(Offset offset) {
      Map<TopicPartition, Long> out = new HashMap<>();
      try {
        JSON.readTree(offset.json()).fields().forEachRemaining(topic ->
            topic.getValue().fields().forEachRemaining(p -> out.put(
                new TopicPartition(topic.getKey(), Integer.parseInt(p.getKey())),
                p.getValue().asLong())));
      } catch (JsonProcessingException e) {
        throw new IllegalStateException("not a Kafka source offset: " + offset.json(), e);
      }
      return out;
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
    public synchronized void stop() {
      if (latest != null) {
        latest.close();
        latest = null;
      }
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
