package io.mirrorline.writer;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Producers kept per executor JVM, so a task does not pay for a new client,
 * connections and metadata each micro-batch.
 *
 * <p>At-least-once tasks, of micro-batches and of the real-time mode alike, share
 * one producer per executor, flow and settings ({@link #shared}). Batching the
 * records of every task running on the executor into the same requests moved
 * 100-byte records faster than a producer per task, which made as many send
 * threads, connections and smaller produce requests (benchmarks/RESULTS.md).
 * A record batch takes all of {@code batch.size} from {@code buffer.memory} as soon as
 * it opens, however few records it holds. A producer per task needs room for one
 * partition's open and in-flight batches; the shared one needs it for every
 * partition its tasks write at once ({@link #forPartitions}): with one task's
 * buffer, the tasks of a real-time query, each with small batches open and in
 * flight, waited in {@code send} for room. More than that room, such as Kafka's default 32 MiB for
 * one or two tasks, only lets a backlog of unacknowledged records (and the objects
 * that track them) pile up for the collector: an executor short of CPU spent a
 * third of it there (benchmarks/RESULTS.md).
 * Delivery reports still come per record, so each task waits for its own. A
 * shared producer is discarded for every task using it at the first delivery that
 * fails one of them ({@link AtLeastOnceWriter}); their sends then fail too, and the
 * driver writes their batch again from its saved progress.
 *
 * <p>Transactional producers cannot be shared: a transaction covers one source
 * partition's records. They are kept per transactional id: the one that already
 * ran {@code initTransactions} for a partition is reused by the next task of that
 * partition on this executor. When another executor (or a later driver) initialises
 * the same id, the broker fences this one and its next transaction fails with a
 * fencing error; the writer then closes it and starts a new one, which fences in
 * turn (see {@link ExactlyOnceWriter}).
 *
 * <p>A producer unused for {@link #IDLE_LIMIT} is closed: a flow that stopped, or
 * a cluster that went away, must not keep connections and retries alive.
 */
final class ProducerPool {
  static final Duration IDLE_LIMIT = Duration.ofMinutes(2);
  private static final Map<String, Deque<Idle>> IDLE = new HashMap<>();
  private static final Map<String, Shared> SHARED = new HashMap<>();
  private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);
  private static final Map<String, Object> KAFKA_DEFAULTS =
      ProducerConfig.configDef().defaultValues();

  /** A producer given back, and when. */
  private static final class Idle {
    final KafkaProducer<byte[], byte[]> producer;
    final long since = System.nanoTime();

    Idle(KafkaProducer<byte[], byte[]> producer) {
      this.producer = producer;
    }
  }

  /** A producer shared by at-least-once tasks: how many use it, since when, why it was discarded. */
  private static final class Shared {
    final KafkaProducer<byte[], byte[]> producer;
    final AtomicReference<String> discarded = new AtomicReference<>();
    int users;
    long since = System.nanoTime();

    Shared(KafkaProducer<byte[], byte[]> producer) {
      this.producer = producer;
    }
  }

  static {
    Housekeeping.register("producers", ProducerPool::closeIdle, ProducerPool::closeAll);
  }

  private ProducerPool() {}

  /**
   * A transactional producer's {@code retry.backoff.ms} unless the user set one. Its
   * I/O thread sleeps that long before every transactional request it sends again,
   * and the request that waited for a coordinator lookup counts as sent again: with
   * Kafka's 100 ms each new producer slept twice, before {@code InitProducerId} and
   * before its first {@code TxnOffsetCommit}, 200 ms per source partition and
   * executor in the first batch (benchmarks/RESULTS.md). Retries of records back off
   * exponentially from it to {@code retry.backoff.max.ms}, as with any value.
   */
  static final String TRANSACTIONAL_RETRY_BACKOFF_MS = "10";

  /** The settings of the producer with {@code transactionalId}. */
  private static Map<String, String> transactional(
      Map<String, String> settings, String transactionalId) {
    Map<String, String> withId = new TreeMap<>(settings);
    withId.put("transactional.id", transactionalId);
    withId.putIfAbsent("retry.backoff.ms", TRANSACTIONAL_RETRY_BACKOFF_MS);
    return withId;
  }

  /** True when the producer came from the pool (its transactions are initialised). */
  static KafkaProducer<byte[], byte[]> borrowTransactional(
      Map<String, String> settings, String transactionalId, boolean[] reused) {
    Map<String, String> withId = transactional(settings, transactionalId);
    String key = key(withId);
    synchronized (IDLE) {
      Deque<Idle> idle = IDLE.get(key);
      if (idle != null && !idle.isEmpty()) {
        reused[0] = true;
        return idle.pop().producer;
      }
    }
    reused[0] = false;
    return create(withId);
  }

  static void giveBackTransactional(
      Map<String, String> settings, String transactionalId, KafkaProducer<byte[], byte[]> producer) {
    synchronized (IDLE) {
      IDLE.computeIfAbsent(key(transactional(settings, transactionalId)), k -> new ArrayDeque<>())
          .push(new Idle(producer));
    }
  }

  /** The shared producer as one task holds it: given back when done, discarded when it failed. */
  interface Lease {
    KafkaProducer<byte[], byte[]> producer();

    void giveBack();

    /**
     * Close the producer at once for every task using it (the first call does;
     * later ones, from any task, change nothing). Safe from a delivery report.
     */
    void discard(String why);

    /** The {@code why} of the first {@link #discard}, or null while the producer is in use. */
    String discardedBecause();
  }

  /**
   * The executor's producer for {@code flow} and {@code settings}, shared by the flow's
   * at-least-once tasks. Flows never share one, even with equal settings (a
   * {@code client.id} set by the user): a producer that fails is discarded for all
   * its tasks.
   */
  static Lease shared(String flow, Map<String, String> settings, int partitions) {
    Map<String, String> effective =
        forPartitions(settings, partitions, Runtime.getRuntime().maxMemory());
    String key = flow + '\u0000' + key(effective);
    Shared shared;
    synchronized (IDLE) {
      shared = SHARED.computeIfAbsent(key, k -> new Shared(create(effective)));
      shared.users++;
    }
    return new Lease() {
      public KafkaProducer<byte[], byte[]> producer() {
        return shared.producer;
      }

      public void giveBack() {
        synchronized (IDLE) {
          shared.users--;
          shared.since = System.nanoTime();
        }
      }

      public void discard(String why) {
        if (!shared.discarded.compareAndSet(null, why)) {
          return;
        }
        synchronized (IDLE) {
          SHARED.remove(key, shared); // unless another task already replaced it
        }
        ProducerPool.discard(shared.producer);
      }

      public String discardedBecause() {
        return shared.discarded.get();
      }
    };
  }

  /**
   * The settings of a producer the tasks of {@code partitions} source partitions share:
   * {@code buffer.memory} is the room for each partition to have a batch open and
   * {@code max.in.flight.requests.per.connection} batches in flight, each of
   * {@code batch.size}, but no more than a quarter of {@code maxHeap}, and never less
   * than {@code max.request.size} (a record larger than the buffer is refused by the
   * producer itself). A {@code buffer.memory} given is a floor: the tasks share it.
   */
  static Map<String, String> forPartitions(Map<String, String> settings, int partitions,
      long maxHeap) {
    long batchSize = number(settings, ProducerConfig.BATCH_SIZE_CONFIG);
    long batches = number(settings, ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION) + 1;
    long largest = Math.max(batchSize, number(settings, ProducerConfig.MAX_REQUEST_SIZE_CONFIG));
    long room = Math.max(largest, Math.min(Math.max(1, partitions) * batches * batchSize,
        maxHeap / 4));
    String buffer = ProducerConfig.BUFFER_MEMORY_CONFIG;
    long given = settings.containsKey(buffer) ? number(settings, buffer) : 0;
    Map<String, String> out = new TreeMap<>(settings);
    out.put(buffer, Long.toString(Math.max(given, room)));
    return out;
  }

  /** The setting {@code name}, or the Kafka producer's default for it. */
  private static long number(Map<String, String> settings, String name) {
    String value = settings.get(name);
    return value != null ? Long.parseLong(value.trim())
        : ((Number) KAFKA_DEFAULTS.get(name)).longValue();
  }

  static void discard(KafkaProducer<byte[], byte[]> producer) {
    try {
      producer.close(Duration.ZERO);
    } catch (RuntimeException ignored) {
      // A broken producer may fail to close; it is dropped all the same.
    }
  }

  private static KafkaProducer<byte[], byte[]> create(Map<String, String> settings) {
    Properties props = new Properties();
    props.putAll(settings);
    props.put("key.serializer", ByteArraySerializer.class.getName());
    props.put("value.serializer", ByteArraySerializer.class.getName());
    return new KafkaProducer<>(props);
  }

  private static String key(Map<String, String> settings) {
    return new TreeMap<>(settings).toString();
  }

  private static void closeIdle() {
    long limit = System.nanoTime() - IDLE_LIMIT.toNanos();
    List<KafkaProducer<byte[], byte[]>> stale = new ArrayList<>();
    synchronized (IDLE) {
      for (Deque<Idle> idle : IDLE.values()) {
        // Newest first (push/pop): the stale ones are at the end.
        while (!idle.isEmpty() && idle.peekLast().since < limit) {
          stale.add(idle.pollLast().producer);
        }
      }
      IDLE.values().removeIf(Deque::isEmpty);
      SHARED.values().removeIf(shared -> {
        boolean unused = shared.users == 0 && shared.since < limit;
        if (unused) {
          stale.add(shared.producer);
        }
        return unused;
      });
    }
    stale.forEach(ProducerPool::discard);
  }

  private static void closeAll() {
    List<KafkaProducer<byte[], byte[]>> all = new ArrayList<>();
    synchronized (IDLE) {
      IDLE.values().forEach(idle -> idle.forEach(entry -> all.add(entry.producer)));
      IDLE.clear();
      SHARED.values().forEach(shared -> all.add(shared.producer));
      SHARED.clear();
    }
    for (KafkaProducer<byte[], byte[]> producer : all) {
      try {
        producer.close(CLOSE_TIMEOUT);
      } catch (RuntimeException ignored) {
        // The JVM is going away.
      }
    }
  }
}
