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

  /**
   * In which order a task hands out its ranges' records. The at-least-once writer
   * takes them {@link #IN_TURNS}: every range keeps a fetch in flight while the
   * others are written, as a consumer of many partitions does. The exactly-once
   * writer runs one transaction per partition and takes them {@link
   * #ONE_AFTER_ANOTHER}: each range's records together.
   */
  enum Order {
    IN_TURNS,
    ONE_AFTER_ANOTHER
  }

  /** The records of {@code ranges}, in {@code order}. */
  static Records read(String flow, Map<String, String> settings, List<SourceRange> ranges, Order order) {
    return new Records(flow, settings, ranges, order);
  }

  /**
   * A task's records. Opening it takes every range's cursor and starts a fetch for
   * each range whose records the cursor does not hold yet ({@link Cursor#prefetch}),
   * so that a task of many ranges waits for the source about once, not once per range.
   *
   * <p>In turns, the task hands out what one cursor holds (one poll's records), then
   * goes on to the next. A cursor that holds nothing is polled without waiting, which
   * takes in what reached its socket and sends its next fetch, and the turn passes on;
   * only when a whole round found nothing does the task wait, briefly, on one of them.
   * So each range's fetches follow each other one round trip apart however many ranges
   * the task has: read one after the other, a range got one fetch per round trip only
   * while it was being read, and a task's ranges took a round trip each per fetch.
   *
   * <p>A range's cursor is given back as soon as its range is read to the end. Closing
   * the records closes the cursor that was being read when they were closed (a failed
   * or cancelled task may have stopped it within a poll) and gives back the others:
   * the next batch seeks a cursor that is not where its range starts.
   */
  static final class Records implements Iterator<SourceRecord>, AutoCloseable {
    // Turns for a cursor that holds nothing while the others might: a short wait, as
    // the others' responses wait in their sockets meanwhile.
    private static final Duration TURN_WAIT = Duration.ofMillis(10);
    private final boolean inTurns;
    private final List<Pending> pending; // the ranges not read to the end yet
    private int turn = -1; // index in pending of the range being read
    private int idleTurns; // turns in a row that found nothing
    // The range being read and its cursor, pending's entry at turn held apart: the
    // per-record path reads them without a list lookup.
    private Cursor cursor;
    private SourceRange range;
    private SourceRecord next;

    /** A range not read to the end yet, and the cursor that reads it. */
    private record Pending(Cursor cursor, SourceRange range) {}

    private Records(String flow, Map<String, String> settings, List<SourceRange> planned, Order order) {
      inTurns = order == Order.IN_TURNS;
      pending = new ArrayList<>(planned.size());
      List<Cursor> taken = new ArrayList<>(planned.size());
      try {
        for (SourceRange p : planned) {
          Key key = new Key(flow, settings, new TopicPartition(p.topic, p.partition));
          Cursor idle = IDLE.remove(key);
          Cursor c = idle != null ? idle : new Cursor(key);
          taken.add(c);
          SourceRange r = c.resolve(p);
          c.startAt(r.from);
          c.prefetch(r);
          pending.add(new Pending(c, r));
        }
      } catch (RuntimeException e) {
        taken.forEach(Cursor::close);
        throw e;
      }
    }

    @Override
    public boolean hasNext() {
      if (next == null && (cursor == null || (next = cursor.held(range)) == null)) {
        return nextTurn();
      }
      return true;
    }

    /**
     * Find the next record when the cursor being read holds none: finish its range
     * if it is read, pass the turn on, poll. Its own method, not part of {@link
     * #hasNext}: what happens once a poll then never throws away the compiled
     * per-record code, which HotSpot did at the second batch when this was inlined
     * there.
     */
    private boolean nextTurn() {
      while (true) {
        if (cursor != null && cursor.finished(range)) {
          finishRange();
        }
        if (pending.isEmpty()) {
          return false;
        }
        if (cursor == null || inTurns) {
          turn = (turn + 1) % pending.size();
          cursor = pending.get(turn).cursor();
          range = pending.get(turn).range();
        }
        boolean alone = !inTurns || pending.size() == 1;
        Duration wait = alone ? POLL : idleTurns >= pending.size() ? TURN_WAIT : Duration.ZERO;
        next = cursor.read(range, wait);
        if (next != null) {
          idleTurns = 0;
          return true;
        }
        idleTurns = wait.isZero() ? idleTurns + 1 : 0;
      }
    }

    private void finishRange() {
      cursor.endRange();
      giveBack(cursor);
      pending.remove(turn);
      turn--; // the next turn is the range that followed
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
      for (Pending p : pending) {
        if (p.cursor() == cursor) {
          p.cursor().close();
        } else {
          giveBack(p.cursor());
        }
      }
      pending.clear();
      cursor = null;
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
    long waitingSince; // System.nanoTime() of the first poll in a row that brought nothing; 0: none

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
        poll(Duration.ZERO);
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

    /**
     * The range's next record the cursor holds, or null when it holds none or the
     * range is read (then {@link #finished}). Reads no clock and asks the broker
     * nothing: the per-record path.
     */
    SourceRecord held(SourceRange range) {
      while (unread < fetched.length) {
        ConsumerRecord<byte[], byte[]> head = fetched[unread];
        if (head.offset() < position) {
          unread++; // before where reading goes on: handed out or skipped already
          continue;
        }
        if (head.offset() >= range.until) {
          position = range.until;
          return null;
        }
        unread++;
        position = head.offset() + 1;
        return SourceRecord.of(head);
      }
      return null;
    }

    boolean finished(SourceRange range) {
      return position >= range.until;
    }

    /**
     * The range's next record: one it holds, else one a poll waiting at most {@code
     * wait} brings; null when there is none yet or the range is read.
     *
     * @throws DeliveryFailed when polls brought nothing for {@link #TIMEOUT}
     */
    SourceRecord read(SourceRange range, Duration wait) {
      SourceRecord record = held(range);
      if (record != null || finished(range)) {
        return record;
      }
      poll(wait);
      if (unread < fetched.length) {
        waitingSince = 0;
        return held(range);
      }
      long now = System.nanoTime();
      if (waitingSince == 0) {
        waitingSince = now;
      } else if (now - waitingSince > TIMEOUT.toNanos()) {
        throw new DeliveryFailed("flow " + key.flow() + ": no records of " + range.topic + "["
            + range.partition + "] from offset " + position + " within " + TIMEOUT.toSeconds() + "s");
      }
      return null;
    }

    /** Let go of the records handed out: the cursor may wait long for its next range. */
    void endRange() {
      fetched = unread == fetched.length
          ? NONE
          : Arrays.copyOfRange(fetched, unread, fetched.length);
      unread = 0;
      waitingSince = 0;
    }

    /** Poll, keeping what it brings after the records held. */
    private void poll(Duration wait) {
      ConsumerRecord<byte[], byte[]>[] more;
      try {
        more = consumer.poll(wait).records(key.partition()).toArray(NONE);
      } catch (OffsetOutOfRangeException e) {
        // Deleted (retention, DeleteRecords): go on from the earliest offset still there.
        long earliest = consumer.beginningOffsets(Collections.singletonList(key.partition()))
            .get(key.partition());
        fetched = NONE;
        unread = 0;
        position = Math.max(earliest, position);
        consumer.seek(key.partition(), position);
        return;
      }
      int held = fetched.length - unread;
      if (held == 0) {
        fetched = more;
        unread = 0;
        if (more.length == 0) {
          // Offsets without records (transaction markers, aborted or compacted records).
          position = Math.max(position, consumer.position(key.partition()));
        }
      } else if (more.length > 0) {
        // The held records, then room for the poll's (copyOfRange pads past the end).
        ConsumerRecord<byte[], byte[]>[] both =
            Arrays.copyOfRange(fetched, unread, unread + held + more.length);
        System.arraycopy(more, 0, both, held, more.length);
        fetched = both;
        unread = 0;
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
