package io.mirrorline.writer;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Producers kept per executor JVM, so a task does not pay for a new client,
 * connections and metadata each micro-batch.
 *
 * <p>A task borrows a producer for itself and gives it back when its batch is
 * written; one that failed is closed instead, so the next task starts clean.
 * Transactional producers are kept per transactional id: the one that already
 * ran {@code initTransactions} for a partition is reused by the next task of that
 * partition on this executor. When another executor (or a later driver) initialises
 * the same id, the broker fences this one and its next transaction fails with a
 * fencing error; the writer then closes it and starts a new one, which fences in
 * turn (see {@link ExactlyOnceWriter}).
 */
final class ProducerPool {
  private static final Map<String, Deque<KafkaProducer<byte[], byte[]>>> IDLE = new HashMap<>();
  private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(ProducerPool::closeAll, "mirrorline-producers"));
  }

  private ProducerPool() {}

  static KafkaProducer<byte[], byte[]> borrow(Map<String, String> settings) {
    String key = key(settings);
    synchronized (IDLE) {
      Deque<KafkaProducer<byte[], byte[]>> idle = IDLE.get(key);
      if (idle != null && !idle.isEmpty()) {
        return idle.pop();
      }
    }
    return create(settings);
  }

  /** True when the producer came from the pool (its transactions are initialised). */
  static KafkaProducer<byte[], byte[]> borrowTransactional(
      Map<String, String> settings, String transactionalId, boolean[] reused) {
    Map<String, String> withId = new TreeMap<>(settings);
    withId.put("transactional.id", transactionalId);
    String key = key(withId);
    synchronized (IDLE) {
      Deque<KafkaProducer<byte[], byte[]>> idle = IDLE.get(key);
      if (idle != null && !idle.isEmpty()) {
        reused[0] = true;
        return idle.pop();
      }
    }
    reused[0] = false;
    return create(withId);
  }

  static void giveBack(Map<String, String> settings, KafkaProducer<byte[], byte[]> producer) {
    synchronized (IDLE) {
      IDLE.computeIfAbsent(key(settings), k -> new ArrayDeque<>()).push(producer);
    }
  }

  static void giveBackTransactional(
      Map<String, String> settings, String transactionalId, KafkaProducer<byte[], byte[]> producer) {
    Map<String, String> withId = new TreeMap<>(settings);
    withId.put("transactional.id", transactionalId);
    giveBack(withId, producer);
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

  private static void closeAll() {
    synchronized (IDLE) {
      for (Deque<KafkaProducer<byte[], byte[]>> idle : IDLE.values()) {
        for (KafkaProducer<byte[], byte[]> producer : idle) {
          try {
            producer.close(CLOSE_TIMEOUT);
          } catch (RuntimeException ignored) {
            // The JVM is going away.
          }
        }
      }
      IDLE.clear();
    }
  }
}
