package io.mirrorline.writer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What one task wrote for one source partition, and its summary for the driver.
 *
 * <p>The task thread appends each record it sends; the producer's I/O thread
 * fills in the target offset of the record when its delivery report arrives.
 * Both go through this object's lock (uncontended in practice).
 *
 * <p>A real-time task runs for minutes and reports as it goes ({@link #report}):
 * the records at the head of the log that the target has acknowledged, with
 * every record sent before them, are <em>settled</em>. Their offset mapping is
 * folded into runs and the records themselves are forgotten, so the log holds
 * only what is still in flight, however long the task runs.
 */
final class PartitionLog {
  /** How many refusals a summary describes in words (all are counted). */
  static final int REFUSALS_DESCRIBED = 3;
  // Marks in place of a target offset; ROUTED and HANDLED (at most ROUTED) may settle.
  private static final long PENDING = -2L;
  private static final long REFUSED = -1L;
  private static final long ROUTED = -3L; // acknowledged, on another topic or partition
  private static final long HANDLED = -4L; // refused, then counted and dead-lettered

  final String topic;
  final int partition;
  final long firstSeen; // the first record of the input, written or not
  long nextOffset; // after the last record seen, written or not
  long filtered; // not written: provenance says the target had the record before
  long skipped; // not written: an earlier attempt already committed it (exactly-once)
  long dropped; // not written: a transform dropped it
  private long routed; // written elsewhere: a transform routed it to another topic or partition
  long bytes;
  // Since the last report (or the start): the oldest original timestamp written,
  // and the replication latency of the records the target acknowledged (the time
  // of the acknowledgement minus the record's timestamp; records without one skipped).
  private long minTimestamp = Long.MAX_VALUE;
  private long latencyMin = Long.MAX_VALUE;
  private long latencyMax;
  private long latencySum; // these two over the whole task
  private long latencyCount;
  final List<Refusal> refusals = new ArrayList<>();
  long deadLettered;
  // Settled records, as runs: first the mapping of records before this attempt's,
  // committed by an earlier one (exactly-once, see CommittedRuns), then what
  // reports settled (real-time).
  private final List<long[]> settled = new ArrayList<>();
  private long settledRecords;
  private long[] firstSettled; // source and target offset of the first and last
  private long[] lastSettled; // settled record of this task, or null
  // The records not settled yet, in send order; index i here is record base + i.
  private long base;
  private long[] sourceOffsets = new long[64];
  private long[] targetOffsets = new long[64];
  private int sent;

  PartitionLog(String topic, int partition, long firstSeen) {
    this.topic = topic;
    this.partition = partition;
    this.firstSeen = firstSeen;
    this.nextOffset = firstSeen;
  }

  /** Note a record handed to the producer; returns its index for {@link #delivered}. */
  synchronized long noteSent(SourceRecord record) {
    bytes += record.size();
    if (record.timestampMs >= 0 && record.timestampMs < minTimestamp) {
      minTimestamp = record.timestampMs;
    }
    return note(record.offset);
  }

  /** Note a record refused before it was sent (too large, a transform failed on it). */
  synchronized long noteRefused(SourceRecord record) {
    long index = note(record.offset);
    refusedAt(index);
    return index;
  }

  /** Note a record sent to another topic or partition than its copy's (a transform routed it). */
  synchronized long noteRouted(SourceRecord record) {
    return note(record.offset);
  }

  private long note(long sourceOffset) {
    if (sent == sourceOffsets.length) {
      sourceOffsets = Arrays.copyOf(sourceOffsets, sent * 2);
      targetOffsets = Arrays.copyOf(targetOffsets, sent * 2);
    }
    sourceOffsets[sent] = sourceOffset;
    targetOffsets[sent] = PENDING;
    return base + sent++;
  }

  /**
   * The target acknowledged the record noted at {@code index}, at {@code nowMs}: its
   * offset there, and its latency when it has a timestamp ({@code timestampMs >= 0}).
   */
  synchronized void delivered(long index, long targetOffset, long timestampMs, long nowMs) {
    targetOffsets[(int) (index - base)] = targetOffset;
    if (timestampMs >= 0) {
      long latency = Math.max(0L, nowMs - timestampMs);
      latencyMin = Math.min(latencyMin, latency);
      latencyMax = Math.max(latencyMax, latency);
      latencySum += latency;
      latencyCount++;
    }
  }

  /** The target acknowledged the routed record noted at {@code index}. */
  synchronized void routedDelivered(long index) {
    targetOffsets[(int) (index - base)] = ROUTED;
    routed++;
  }

  synchronized void refusedAt(long index) {
    targetOffsets[(int) (index - base)] = REFUSED;
  }

  /** The refused record noted at {@code index} is counted and dead-lettered: it may settle. */
  synchronized void handledAt(long index) {
    targetOffsets[(int) (index - base)] = HANDLED;
  }

  /** The summary row the driver reads (`engine/batch_writer.PartitionResult`): the whole task. */
  synchronized Map<String, Object> summary(long nowMs) {
    long[][] delivered = deliveredOffsets();
    return row(nowMs, nextOffset, allRuns(delivered[0], delivered[1]),
        delivered[0].length, delivered[0], delivered[1]);
  }

  /**
   * The summary of the settled records, for a report while the task runs: its next
   * offset is that of the first record not settled. Counters cover the whole task
   * so far; the oldest timestamp and the latency extremes cover the time since the
   * last report, and start again.
   */
  synchronized Map<String, Object> report(long nowMs) {
    settle();
    long next = sent > 0 ? sourceOffsets[0] : nextOffset;
    Map<String, Object> row = row(nowMs, next, new ArrayList<>(settled), 0, null, null);
    minTimestamp = Long.MAX_VALUE;
    latencyMin = Long.MAX_VALUE;
    latencyMax = 0;
    return row;
  }

  /** Fold the acknowledged (or handled) head of the log into the settled runs. */
  private void settle() {
    int n = 0;
    while (n < sent && (targetOffsets[n] >= 0 || targetOffsets[n] <= ROUTED)) {
      n++;
    }
    if (n == 0) {
      return;
    }
    long[][] head = deliveredOffsets(n);
    for (long[] run : runs(head[0], head[1])) {
      extend(settled, run);
    }
    int count = head[0].length;
    if (count > 0) {
      if (firstSettled == null) {
        firstSettled = new long[] {head[0][0], head[1][0]};
      }
      lastSettled = new long[] {head[0][count - 1], head[1][count - 1]};
      settledRecords += count;
    }
    System.arraycopy(sourceOffsets, n, sourceOffsets, 0, sent - n);
    System.arraycopy(targetOffsets, n, targetOffsets, 0, sent - n);
    sent -= n;
    base += n;
  }

  /**
   * A summary row: the settled records and, when {@code source} is given, the
   * {@code count} records of it not settled.
   */
  private Map<String, Object> row(long nowMs, long next, List<long[]> runs, int count,
      long[] source, long[] target) {
    List<String> described = new ArrayList<>();
    for (Refusal r : refusals.subList(0, Math.min(REFUSALS_DESCRIBED, refusals.size()))) {
      described.add(r.describe());
    }
    long[] first = firstSettled != null ? firstSettled
        : count > 0 ? new long[] {source[0], target[0]} : null;
    long[] last = count > 0 ? new long[] {source[count - 1], target[count - 1]} : lastSettled;
    Long oldest = minTimestamp == Long.MAX_VALUE ? null : minTimestamp;
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("topic", topic);
    row.put("partition", partition);
    row.put("records", settledRecords + count);
    row.put("filtered", filtered);
    row.put("skipped", skipped);
    row.put("dropped", dropped);
    row.put("routed", routed);
    row.put("refused", (long) refusals.size());
    row.put("dead_lettered", deadLettered);
    row.put("refusals", described);
    row.put("first_seen", firstSeen);
    row.put("next_offset", next);
    row.put("bytes", bytes);
    row.put("first_offset", first == null ? null : first[0]);
    row.put("last_offset", last == null ? null : last[0]);
    row.put("first_target_offset", first == null ? null : first[1]);
    row.put("last_target_offset", last == null ? null : last[1]);
    row.put("min_timestamp", oldest);
    row.put("max_age_ms", oldest == null ? 0L : Math.max(0L, nowMs - oldest));
    row.put("latency_count", latencyCount);
    row.put("latency_sum_ms", latencySum);
    row.put("latency_min_ms", latencyMin == Long.MAX_VALUE ? 0L : latencyMin);
    row.put("latency_max_ms", latencyMax);
    row.put("runs", runs);
    return row;
  }

  /**
   * The batch's exact offset mapping as runs {@code [source start, target start, count]}:
   * maximal stretches where both offsets advance by one. The driver chooses the
   * offset syncs from them ({@code engine/sync_points.py}); the runs themselves are
   * few (one per partition and batch unless there are gaps on either side).
   */
  static List<long[]> runs(long[] source, long[] target) {
    List<long[]> out = new ArrayList<>();
    int start = 0;
    for (int i = 1; i <= source.length; i++) {
      if (i == source.length || source[i] - source[i - 1] != 1 || target[i] - target[i - 1] != 1) {
        out.add(new long[] {source[start], target[start], i - start});
        start = i;
      }
    }
    return out;
  }

  synchronized void inherit(List<long[]> runs) {
    settled.clear();
    settled.addAll(runs);
  }

  /** The settled runs, then those of {@code source} and {@code target} ({@link #deliveredOffsets}). */
  synchronized List<long[]> allRuns(long[] source, long[] target) {
    List<long[]> all = new ArrayList<>();
    for (long[] run : settled) {
      all.add(run.clone());
    }
    for (long[] run : runs(source, target)) {
      extend(all, run);
    }
    return all;
  }

  /** Add {@code run} to the end of {@code runs}, as part of the last one when it goes on from it. */
  private static void extend(List<long[]> runs, long[] run) {
    long[] last = runs.isEmpty() ? null : runs.get(runs.size() - 1);
    if (last != null && run[0] == last[0] + last[2] && run[1] == last[1] + last[2]) {
      last[2] += run[2];
    } else {
      runs.add(run);
    }
  }

  /** Source and target offsets of the records not settled that the target accepted. */
  synchronized long[][] deliveredOffsets() {
    return deliveredOffsets(sent);
  }

  private long[][] deliveredOffsets(int upTo) {
    long[] source = new long[upTo];
    long[] target = new long[upTo];
    int n = 0;
    for (int i = 0; i < upTo; i++) {
      if (targetOffsets[i] >= 0) {
        source[n] = sourceOffsets[i];
        target[n] = targetOffsets[i];
        n++;
      }
    }
    return new long[][] {Arrays.copyOf(source, n), Arrays.copyOf(target, n)};
  }
}
