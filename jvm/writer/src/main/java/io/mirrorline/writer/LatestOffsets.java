package io.mirrorline.writer;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The latest offsets of a query's source partitions, for the planning of its batches.
 *
 * <p>Every micro-batch is planned up to the latest offsets of its partitions. Spark's
 * reader asks for them when it plans the batch, with four round trips to the source
 * (the topics' description, their metadata, then the offsets): at 100 ms away, 400 ms
 * of every batch. Here one consumer, kept with its metadata, asks in one request, on a
 * thread of its own, in one of two ways:
 *
 * <ul>
 *   <li>for a near source (the last request took under {@link #FAR_MS}) when the
 *       planning asks ({@link #get}), which waits for the answer: the batch gets the
 *       offsets of that moment, for a millisecond or two;
 *   <li>for a far one, one request after the other, {@link #PAUSE_MS} apart, and the
 *       planning takes the last answer without waiting. That answer is at most a
 *       round trip and a pause old: the newest records go to the next batch instead
 *       of every batch waiting a round trip for the source.
 * </ul>
 *
 * <p>The offsets are what the broker answered (its high watermarks, or the last stable
 * offsets under {@code isolation.level = read_committed}), never beyond what the
 * partitions hold. A failed request leaves the last answer in use; when no answer came
 * for {@link #TIMEOUT}, {@link #get} throws the last failure: the query stops and the
 * flow reports why.
 */
final class LatestOffsets implements AutoCloseable {
  static final Duration TIMEOUT = Duration.ofSeconds(30);
  static final long FAR_MS = 10;
  static final long PAUSE_MS = 25;
  private static final long RETRY_MS = 1_000;

  private final KafkaConsumer<byte[], byte[]> consumer;
  private final List<TopicPartition> partitions;
  private final Thread thread;
  // Under lock: the last answer (null until the first), when its request started
  // (System.nanoTime()), the last request's failure (cleared by an answer), whether
  // the source is far, and the planning's asks: the newest, and the newest answered.
  private final Object lock = new Object();
  private Map<TopicPartition, Long> latest;
  private long answeredAt;
  private RuntimeException failure;
  private boolean far;
  private long asked;
  private long answered;
  private boolean closed;

  LatestOffsets(String query, Map<String, Object> settings, List<TopicPartition> partitions) {
    Map<String, Object> config = new HashMap<>(settings);
    config.remove("group.id");
    config.put("enable.auto.commit", "false");
    config.put("client.id", "mirrorline|" + query + "|latest-offsets");
    this.consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(),
        new ByteArrayDeserializer());
    this.partitions = List.copyOf(partitions);
    this.thread = new Thread(this::run, "mirrorline-latest-offsets " + query);
    thread.setDaemon(true);
    thread.start();
  }

  /**
   * The offsets to plan a batch up to: for a near source (and the first time) an
   * answer to a request made now, for a far one the last answer. Throws when no
   * answer came for {@link #TIMEOUT}.
   */
  Map<TopicPartition, Long> get() {
    long deadline = System.nanoTime() + TIMEOUT.toNanos();
    synchronized (lock) {
      if (!far || latest == null) {
        long ask = ++asked;
        lock.notifyAll();
        while ((answered < ask || latest == null) && !closed && System.nanoTime() < deadline) {
          waitUntil(deadline);
        }
      }
      boolean stale = latest == null || System.nanoTime() - answeredAt > TIMEOUT.toNanos();
      if (stale) {
        String why = failure != null ? failure.toString() : "no answer within " + TIMEOUT;
        throw new IllegalStateException("cannot read the latest offsets of "
            + partitions.size() + " source partitions (" + partitions.get(0) + "...): " + why,
            failure);
      }
      return latest;
    }
  }

  private void waitUntil(long deadline) {
    try {
      lock.wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for the latest offsets", e);
    }
  }

  private void run() {
    try {
      while (true) {
        long ask;
        synchronized (lock) {
          while (!closed && !far && answered == asked && latest != null) {
            lock.wait(); // near: until the planning asks (retrying until a first answer)
          }
          if (closed) {
            break;
          }
          ask = asked;
        }
        long pause = request(ask) ? PAUSE_MS : RETRY_MS;
        synchronized (lock) {
          if (!closed && (far || pause == RETRY_MS)) {
            lock.wait(pause);
          }
        }
      }
    } catch (InterruptedException | WakeupException | InterruptException e) {
      // closing
    } finally {
      consumer.close(Duration.ofSeconds(5));
    }
  }

  /** One request for the offsets, answering the planning's asks up to {@code ask}. */
  private boolean request(long ask) {
    long start = System.nanoTime();
    try {
      Map<TopicPartition, Long> answer = Map.copyOf(consumer.endOffsets(partitions, TIMEOUT));
      synchronized (lock) {
        latest = answer;
        answeredAt = start;
        failure = null;
        far = System.nanoTime() - start >= FAR_MS * 1_000_000;
        answered = Math.max(answered, ask);
        lock.notifyAll();
      }
      return true;
    } catch (WakeupException | InterruptException e) {
      throw e;
    } catch (RuntimeException e) {
      synchronized (lock) {
        failure = e;
        answered = Math.max(answered, ask); // the planning goes on with the last answer
        lock.notifyAll();
      }
      return false;
    }
  }

  /** Stop asking; the consumer closes on its own thread. */
  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
      lock.notifyAll();
    }
    consumer.wakeup();
    try {
      thread.join(TIMEOUT.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
