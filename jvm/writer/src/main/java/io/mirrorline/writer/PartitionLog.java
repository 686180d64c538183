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
 * fills in the target offset of the i-th record when its delivery report
 * arrives. Both go through this object's lock (uncontended in practice).
 */
final class PartitionLog {
  /** How many refusals a summary describes in words (all are counted). */
  static final int REFUSALS_DESCRIBED = 3;
  private static final long PENDING = -2L;
  private static final long REFUSED = -1L;

  final String topic;
  final int partition;
  final long firstSeen; // the first record of the input, written or not
  long nextOffset; // after the last record seen, written or not
  long filtered; // not written: provenance says the target had the record before
  long skipped; // not written: an earlier attempt already committed it (exactly-once)
  long dropped; // not written: a transform dropped it
  private long routed; // written elsewhere: a transform routed it to another topic or partition
  long bytes;
  long minTimestamp = Long.MAX_VALUE;
  // Replication latency of the records the target acknowledged: the time of the
  // acknowledgement minus the record's original timestamp (records without one skipped).
  private long latencyMin = Long.MAX_VALUE;
  private long latencyMax;
  private long latencySum;
  private long latencyCount;
  final List<Refusal> refusals = new ArrayList<>();
  long deadLettered;
  // The mapping of records before this attempt's, committed by an earlier one
  // (exactly-once, see CommittedRuns): reported before this attempt's own runs.
  private List<long[]> inherited = List.of();
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
  synchronized int noteSent(SourceRecord record) {
    if (sent == sourceOffsets.length) {
      sourceOffsets = Arrays.copyOf(sourceOffsets, sent * 2);
      targetOffsets = Arrays.copyOf(targetOffsets, sent * 2);
    }
    sourceOffsets[sent] = record.offset;
    targetOffsets[sent] = PENDING;
    bytes += record.size();
    if (record.timestampMs >= 0 && record.timestampMs < minTimestamp) {
      minTimestamp = record.timestampMs;
    }
    return sent++;
  }

  /**
   * The target acknowledged the record noted at {@code index}, at {@code nowMs}: its
   * offset there, and its latency when it has a timestamp ({@code timestampMs >= 0}).
   */
  synchronized void delivered(int index, long targetOffset, long timestampMs, long nowMs) {
    targetOffsets[index] = targetOffset;
    if (timestampMs >= 0) {
      long latency = Math.max(0L, nowMs - timestampMs);
      latencyMin = Math.min(latencyMin, latency);
      latencyMax = Math.max(latencyMax, latency);
      latencySum += latency;
      latencyCount++;
    }
  }

  /** The target acknowledged a record that a transform routed away from the remote topic. */
  synchronized void routedDelivered() {
    routed++;
  }

  synchronized void refusedAt(int index) {
    targetOffsets[index] = REFUSED;
  }

  /** The summary row the driver reads (`engine/batch_writer.PartitionResult`). */
  synchronized Map<String, Object> summary(long nowMs) {
    long[][] delivered = deliveredOffsets();
    long[] source = delivered[0];
    long[] target = delivered[1];
    int count = source.length;
    List<String> described = new ArrayList<>();
    for (Refusal r : refusals.subList(0, Math.min(REFUSALS_DESCRIBED, refusals.size()))) {
      described.add(r.describe());
    }
    boolean any = count > 0;
    Long oldest = minTimestamp == Long.MAX_VALUE ? null : minTimestamp;
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("topic", topic);
    row.put("partition", partition);
    row.put("records", (long) count);
    row.put("filtered", filtered);
    row.put("skipped", skipped);
    row.put("dropped", dropped);
    row.put("routed", routed);
    row.put("refused", (long) refusals.size());
    row.put("dead_lettered", deadLettered);
    row.put("refusals", described);
    row.put("first_seen", firstSeen);
    row.put("next_offset", nextOffset);
    row.put("bytes", bytes);
    row.put("first_offset", any ? source[0] : null);
    row.put("last_offset", any ? source[count - 1] : null);
    row.put("first_target_offset", any ? target[0] : null);
    row.put("last_target_offset", any ? target[count - 1] : null);
    row.put("min_timestamp", oldest);
    row.put("max_age_ms", oldest == null ? 0L : Math.max(0L, nowMs - oldest));
    row.put("latency_count", latencyCount);
    row.put("latency_sum_ms", latencySum);
    row.put("latency_min_ms", latencyCount == 0 ? 0L : latencyMin);
    row.put("latency_max_ms", latencyMax);
    row.put("runs", allRuns(source, target));
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
    inherited = runs;
  }

  /** The inherited runs, then those of the records this attempt wrote ({@link #deliveredOffsets}). */
  synchronized List<long[]> allRuns(long[] source, long[] target) {
    List<long[]> all = new ArrayList<>(inherited);
    all.addAll(runs(source, target));
    return all;
  }

  /** Source and target offsets of the records the target accepted. */
  synchronized long[][] deliveredOffsets() {
    long[] source = new long[sent];
    long[] target = new long[sent];
    int n = 0;
    for (int i = 0; i < sent; i++) {
      if (targetOffsets[i] >= 0) {
        source[n] = sourceOffsets[i];
        target[n] = targetOffsets[i];
        n++;
      }
    }
    return new long[][] {Arrays.copyOf(source, n), Arrays.copyOf(target, n)};
  }
}
