package io.mirrorline.writer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads a batch's source offset ranges on an executor.
 *
 * <p>Spark's Kafka source asks the broker for a partition's earliest and latest
 * offsets after every poll and seeks back afterwards, which throws away what the
 * consumer had fetched ahead: two offset requests, a wasted fetch and a wait per
 * poll. This reader keeps one consumer per source partition on the executor
 * between batches ({@link Cursor}), positioned where the partition's last batch
 * ended and holding the records it fetched past that end. The partition's next
 * batch goes on from there: no seek, no fetch thrown away, no offset request.
 *
 * <p>It reads as Spark's source with {@code failOnDataLoss=false} does: when the
 * start of a range was deleted (retention, DeleteRecords), it goes on from the
 * earliest offset still there, and the driver reports the gap ({@code
 * engine/gaps.py}); offsets that hold no record (transaction markers, aborted or
 * compacted records) are skipped. A range whose records do not arrive within
 * {@link #TIMEOUT} fails the task, naming the partition and offset.
 */
final class SourceReader {
  static final Duration TIMEOUT = Duration.ofMinutes(2);
  static final Duration IDLE_LIMIT = Duration.ofMinutes(2);
  private static final Duration POLL = Duration.ofMillis(500);
  // Most records one poll hands out. The consumer turns fetched bytes into records
  // only as polls ask for them, so a batch's range of hundreds of thousands of
  // records is read without holding them all as objects at once: fewer live objects
  // for each young collection to copy. Fetching is unchanged (fetch sizes decide it).
  static final int POLL_RECORDS = 10_000;
  private static final long EARLIEST = -2L;
  private static final long LATEST = -1L;
  private static final Map<Key, Cursor> IDLE = new ConcurrentHashMap<>();

  private SourceReader() {}

  static {
    Housekeeping.register("source-readers", SourceReader::closeIdle, SourceReader::closeAll);
  }

  /** The records of {@code ranges}, one range after the other. */
  static Records read(String flow, Map<String, String> settings, List<SourceRange> ranges) {
    return new Records(flow, settings, ranges);
  }

  /**
   * A task's records, its ranges one after the other. Opening it takes every range's
   * cursor and starts a fetch for each range whose records the cursor does not hold
   * yet ({@link Cursor#prefetch}), so that a task of many ranges waits for the source
   * about once, not once per range: a round trip each to a far cluster. Closing it
   * gives a cursor back only once its range is read to the end, or when it was never
   * started; the one left in the middle (a failed or cancelled task) is closed.
   */
  static final class Records implements Iterator<SourceRecord>, AutoCloseable {
    private final List<Cursor> cursors;
    private final List<SourceRange> ranges;
    private int started; // cursors before this index were handed to reading
    private Cursor cursor;
    private SourceRange range;
    private SourceRecord next;

    private Records(String flow, Map<String, String> settings, List<SourceRange> planned) {
      cursors = new ArrayList<>(planned.size());
      ranges = new ArrayList<>(planned.size());
      try {
        for (SourceRange p : planned) {
          Key key = new Key(flow, settings, new TopicPartition(p.topic, p.partition));
          Cursor idle = IDLE.remove(key);
          Cursor c = idle != null ? idle : new Cursor(key);
          cursors.add(c);
          SourceRange r = c.resolve(p);
          c.startAt(r.from);
          c.prefetch(r);
          ranges.add(r);
        }
      } catch (RuntimeException e) {
        cursors.forEach(Cursor::close);
        throw e;
      }
    }

    @Override
    public boolean hasNext() {
      while (next == null) {
        if (range == null && !openNextRange()) {
          return false;
        }
        next = cursor.next(range);
        if (next == null) {
          finishRange();
        }
      }
      return true;
    }

    /**
     * Start on the next pending range, or say there is none. Its own method, not part
     * of {@link #hasNext}: what happens once a range then never throws away the
     * compiled per-record code, which HotSpot did at the second batch when this was
     * inlined there.
     */
    private boolean openNextRange() {
      if (started == ranges.size()) {
        return false;
      }
      cursor = cursors.get(started);
      range = ranges.get(started);
      started++;
      return true;
    }

    private void finishRange() {
      giveBack(cursor);
      cursor = null;
      range = null;
    }

    @Override
    public SourceRecord next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      SourceRecord record = next;
      next = null;
      return record;
    }

    @Override
    public void close() {
      if (cursor != null) {
        cursor.close();
        cursor = null;
      }
      // Never started: positioned at their ranges' starts, nothing handed out.
      for (; started < cursors.size(); started++) {
        giveBack(cursors.get(started));
      }
    }
  }

  private static void giveBack(Cursor cursor) {
    cursor.idleSince = System.nanoTime();
    Cursor replaced = IDLE.put(cursor.key, cursor);
    if (replaced != null) {
      replaced.close();
    }
  }

  /**
   * Close the cursors of partitions no batch has read for {@link #IDLE_LIMIT}. A
   * cursor is closed only once it is out of the map: a task may take it meanwhile.
   */
  private static void closeIdle() {
    long now = System.nanoTime();
    for (Map.Entry<Key, Cursor> idle : IDLE.entrySet()) {
      Cursor c = idle.getValue();
      if (now - c.idleSince > IDLE_LIMIT.toNanos() && IDLE.remove(idle.getKey(), c)) {
        c.close();
      }
    }
  }

  private static void closeAll() {
    for (Key key : IDLE.keySet()) {
      Cursor c = IDLE.remove(key);
      if (c != null) {
        c.close();
      }
    }
  }

  /** One flow's consumer of one source partition. */
  private record Key(String flow, Map<String, String> settings, TopicPartition partition) {}

  /**
   * A consumer assigned to one partition, and the records it fetched but did not hand out.
   *
   * <p>The records of the last poll are handed out from one array of them, not
   * copied one by one into a collection the cursor keeps (which made every record
   * reachable from an old object, a cost at each young collection). At a range's end
   * the cursor keeps only the records it did not hand out ({@link #endRange}). An
   * array, not the poll's list: the poll, an empty poll and the rest kept at a range's
   * end gave lists of three classes, and each new one made HotSpot throw away the
   * compiled per-record code at a range's end and compile it again.
   */
  private static final class Cursor {
    @SuppressWarnings("unchecked")
    private static final ConsumerRecord<byte[], byte[]>[] NONE =
        (ConsumerRecord<byte[], byte[]>[]) new ConsumerRecord<?, ?>[0];
    final Key key;
    final KafkaConsumer<byte[], byte[]> consumer;
    ConsumerRecord<byte[], byte[]>[] fetched = NONE;
    int unread; // the index in fetched of the first record not handed out
    // Where reading goes on: every offset before it was handed out or held no record.
    long position = -1;
    long idleSince;

    Cursor(Key key) {
      this.key = key;
      Map<String, Object> config = new HashMap<>(key.settings());
      config.put("enable.auto.commit", "false");
      config.put("auto.offset.reset", "none");
      config.put("max.poll.records", String.valueOf(pollRecords(config.get("max.poll.records"))));
      config.remove("group.id");
      config.putIfAbsent("client.id", "mirrorline|" + key.flow() + "|source-reader");
      this.consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
      consumer.assign(Collections.singletonList(key.partition()));
    }

    /**
     * The range with Spark's markers for "earliest" (-2) and "latest" (-1) replaced by
     * the partition's offsets now (a batch read of the Kafka source leaves them to the
     * executors).
     */
    SourceRange resolve(SourceRange range) {
      if (range.from >= 0 && range.until >= 0) {
        return range;
      }
      List<TopicPartition> one = Collections.singletonList(key.partition());
      long earliest = consumer.beginningOffsets(one).get(key.partition());
      long latest = consumer.endOffsets(one).get(key.partition());
      return new SourceRange(range.topic, range.partition,
          range.from == EARLIEST ? earliest : range.from == LATEST ? latest : range.from,
          range.until == EARLIEST ? earliest : range.until == LATEST ? latest : range.until,
          range.executor);
    }

    /** The flow's max.poll.records (records per poll, as in Kafka's consumer), capped. */
    static int pollRecords(Object configured) {
      int max = configured == null ? POLL_RECORDS : Integer.parseInt(configured.toString().trim());
      return Math.min(max, POLL_RECORDS);
    }

    /**
     * Start fetching {@code range} now, unless the records held already reach its end.
     * A poll that does not wait takes in what reached the consumer's socket, hands over
     * what it had fetched (kept after what the cursor holds) and sends its next fetch,
     * in that order: a fetch that arrived since the last poll is taken in by the first
     * poll and handed over by the second, which then sends the next.
     */
    void prefetch(SourceRange range) {
      for (int polls = 0; polls < 2 && reach() < range.until; polls++) {
        ConsumerRecord<byte[], byte[]>[] more;
        try {
          more = consumer.poll(Duration.ZERO).records(key.partition()).toArray(NONE);
        } catch (OffsetOutOfRangeException e) {
          return; // met again, and handled, when the range is read
        }
        int held = fetched.length - unread;
        if (held == 0) {
          fetched = more;
          unread = 0;
        } else if (more.length > 0) {
          ConsumerRecord<byte[], byte[]>[] both = Arrays.copyOf(
              Arrays.copyOfRange(fetched, unread, fetched.length), held + more.length);
          System.arraycopy(more, 0, both, held, more.length);
          fetched = both;
          unread = 0;
        }
      }
    }

    /** The offset after the last record the cursor holds. */
    private long reach() {
      return unread < fetched.length ? fetched[fetched.length - 1].offset() + 1 : position;
    }

    void startAt(long from) {
      if (from != position) {
        fetched = NONE;
        unread = 0;
        consumer.seek(key.partition(), from);
        position = from;
      }
    }

    /** The range's next record, or null once the range is read. */
    SourceRecord next(SourceRange range) {
      // Set at the first fetch: handing out what was fetched needs no clock.
      boolean waiting = false;
      long deadline = 0;
      while (true) {
        if (unread < fetched.length) {
          ConsumerRecord<byte[], byte[]> head = fetched[unread];
          if (head.offset() < position) {
            unread++; // before where reading goes on: handed out or skipped already
            continue;
          }
          if (head.offset() >= range.until) {
            position = range.until;
            endRange();
            return null;
          }
          unread++;
          position = head.offset() + 1;
          return SourceRecord.of(head);
        }
        if (position >= range.until) {
          endRange();
          return null;
        }
        if (!waiting) {
          waiting = true;
          deadline = System.nanoTime() + TIMEOUT.toNanos();
        } else if (System.nanoTime() > deadline) {
          throw new DeliveryFailed("flow " + key.flow() + ": no records of " + range.topic + "["
              + range.partition + "] from offset " + position + " within " + TIMEOUT.toSeconds() + "s");
        }
        fetch();
      }
    }

    /** Let go of the records handed out: the cursor may wait long for its next range. */
    private void endRange() {
      fetched = unread == fetched.length
          ? NONE
          : Arrays.copyOfRange(fetched, unread, fetched.length);
      unread = 0;
    }

    private void fetch() {
      try {
        fetched = consumer.poll(POLL).records(key.partition()).toArray(NONE);
        unread = 0;
      } catch (OffsetOutOfRangeException e) {
        long earliest = consumer.beginningOffsets(Collections.singletonList(key.partition()))
            .get(key.partition());
        consumer.seek(key.partition(), Math.max(earliest, position));
        position = Math.max(earliest, position);
        return;
      }
      if (fetched.length == 0) {
        // Offsets without records (transaction markers, aborted or compacted records).
        position = Math.max(position, consumer.position(key.partition()));
      }
    }

    void close() {
      try {
        consumer.close(Duration.ofSeconds(5));
      } catch (RuntimeException e) {
        // Closing is best effort: the consumer holds no state the flow needs.
      }
    }
  }
}
