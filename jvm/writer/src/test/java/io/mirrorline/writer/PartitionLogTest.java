package io.mirrorline.writer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.Test;

class PartitionLogTest {
  private static SourceRecord record(long offset, long timestamp) {
    return new SourceRecord("orders", 2, offset, null, new byte[10], timestamp, new Header[0]);
  }

  @Test
  void runsSplitAtEveryDiscontinuityOnEitherSide() {
    List<long[]> runs = PartitionLog.runs(new long[] {5, 6, 7, 9, 10, 11}, new long[] {0, 1, 3, 4, 5, 6});
    assertEquals(3, runs.size());
    assertArrayEquals(new long[] {5, 0, 2}, runs.get(0));
    assertArrayEquals(new long[] {7, 3, 1}, runs.get(1));
    assertArrayEquals(new long[] {9, 4, 3}, runs.get(2));
    assertEquals(0, PartitionLog.runs(new long[0], new long[0]).size());
  }

  @Test
  void summaryCountsOnlyDeliveredRecordsInTheirRuns() {
    PartitionLog log = new PartitionLog("orders", 2, 100);
    for (long offset = 100; offset < 104; offset++) {
      long index = log.noteSent(record(offset, 1_000 + offset));
      if (offset == 102) {
        log.refusedAt(index);
      } else {
        log.delivered(index, offset - 50, 1_000 + offset, 1_500 + 10 * offset);
      }
    }
    log.nextOffset = 104;
    Map<String, Object> row = log.summary(2_000);
    assertEquals(3L, row.get("records"));
    assertEquals(100L, row.get("first_offset"));
    assertEquals(103L, row.get("last_offset"));
    assertEquals(53L, row.get("last_target_offset"));
    assertEquals(1_100L, row.get("min_timestamp"));
    assertEquals(900L, row.get("max_age_ms"));
    // Latency = acknowledgement time - timestamp = 500 + 9 * offset, for 100, 101 and 103.
    assertEquals(3L, row.get("latency_count"));
    assertEquals(1_400L, row.get("latency_min_ms"));
    assertEquals(1_427L, row.get("latency_max_ms"));
    assertEquals(1_400L + 1_409L + 1_427L, row.get("latency_sum_ms"));
    @SuppressWarnings("unchecked")
    List<long[]> runs = (List<long[]>) row.get("runs");
    assertEquals(2, runs.size());
    assertArrayEquals(new long[] {100, 50, 2}, runs.get(0));
    assertArrayEquals(new long[] {103, 53, 1}, runs.get(1));
  }

  @Test
  void recordsWithoutTimestampAreLeftOutOfTheLatency() {
    PartitionLog log = new PartitionLog("orders", 2, 0);
    log.delivered(log.noteSent(record(0, -1)), 0, -1, 5_000);
    log.delivered(log.noteSent(record(1, 4_000)), 1, 4_000, 3_000); // a clock behind: 0, not < 0
    Map<String, Object> row = log.summary(5_000);
    assertEquals(1L, row.get("latency_count"));
    assertEquals(0L, row.get("latency_min_ms"));
    assertEquals(0L, row.get("latency_sum_ms"));
  }

  @SuppressWarnings("unchecked")
  private static List<long[]> runsOf(Map<String, Object> row) {
    return (List<long[]>) row.get("runs");
  }

  @Test
  void aReportCoversTheAcknowledgedHeadAndStopsAtTheFirstRecordInFlight() {
    PartitionLog log = new PartitionLog("orders", 2, 100);
    long[] index = new long[6];
    for (int i = 0; i < 6; i++) {
      index[i] = log.noteSent(record(100 + i, 1_000));
    }
    log.nextOffset = 108; // 106 and 107 were filtered
    log.delivered(index[0], 10, 1_000, 1_200);
    log.delivered(index[1], 11, 1_000, 1_300);
    log.delivered(index[3], 13, 1_000, 1_300); // 102 is still in flight
    Map<String, Object> first = log.report(2_000);
    assertEquals(102L, first.get("next_offset"));
    assertEquals(2L, first.get("records"));
    assertEquals(101L, first.get("last_offset"));
    assertEquals(1, runsOf(first).size());
    assertArrayEquals(new long[] {100, 10, 2}, runsOf(first).get(0));

    log.delivered(index[2], 12, 1_000, 1_400);
    log.delivered(index[4], 14, 1_000, 1_400);
    log.delivered(index[5], 15, 1_000, 1_400);
    Map<String, Object> second = log.report(3_000);
    assertEquals(108L, second.get("next_offset")); // everything seen is settled
    assertEquals(6L, second.get("records"));
    assertEquals(100L, second.get("first_offset"));
    assertEquals(105L, second.get("last_offset"));
    assertEquals(15L, second.get("last_target_offset"));
    assertEquals(1, runsOf(second).size()); // the runs of both reports merged
    assertArrayEquals(new long[] {100, 10, 6}, runsOf(second).get(0));
    assertEquals(6L, second.get("latency_count"));

    // The final summary is the same mapping: the settled records are not lost.
    Map<String, Object> summary = log.summary(3_000);
    assertEquals(6L, summary.get("records"));
    assertArrayEquals(new long[] {100, 10, 6}, runsOf(summary).get(0));
  }

  @Test
  void aReportStopsBeforeARefusalUntilItIsHandled() {
    PartitionLog log = new PartitionLog("orders", 2, 0);
    long a = log.noteSent(record(0, 1_000));
    long b = log.noteSent(record(1, 1_000));
    long c = log.noteRouted(record(2, 1_000));
    long d = log.noteSent(record(3, 1_000));
    log.nextOffset = 4;
    log.delivered(a, 50, 1_000, 1_100);
    log.refusedAt(b); // dealt with when the task finishes
    log.routedDelivered(c);
    log.delivered(d, 51, 1_000, 1_100);
    assertEquals(1L, log.report(2_000).get("next_offset"));
    log.handledAt(b); // counted and dead-lettered
    Map<String, Object> passed = log.report(2_000);
    assertEquals(4L, passed.get("next_offset"));
    assertEquals(2L, passed.get("records"));
    assertEquals(2, runsOf(passed).size()); // the refused and the routed record are gaps

    PartitionLog routed = new PartitionLog("orders", 2, 0);
    long r = routed.noteRouted(record(0, 1_000));
    long s = routed.noteSent(record(1, 1_000));
    long t = routed.noteRefused(record(2, 1_000)); // refused before sending
    routed.nextOffset = 3;
    routed.routedDelivered(r);
    routed.delivered(s, 7, 1_000, 1_100);
    Map<String, Object> row = routed.report(2_000);
    assertEquals(2L, row.get("next_offset"));
    assertEquals(1L, row.get("records")); // the routed record settles, without a run
    assertArrayEquals(new long[] {1, 7, 1}, runsOf(row).get(0));
    routed.handledAt(t);
    assertEquals(3L, routed.report(2_000).get("next_offset"));
  }

  @Test
  void theOldestTimestampOfAReportCoversTheTimeSinceTheOneBefore() {
    PartitionLog log = new PartitionLog("orders", 2, 0);
    log.delivered(log.noteSent(record(0, 1_000)), 0, 1_000, 1_100);
    assertEquals(1_000L, log.report(2_000).get("min_timestamp"));
    log.delivered(log.noteSent(record(1, 1_900)), 1, 1_900, 1_950);
    Map<String, Object> row = log.report(2_000);
    assertEquals(1_900L, row.get("min_timestamp"));
    assertEquals(100L, row.get("max_age_ms"));
    assertEquals(50L, row.get("latency_max_ms"));
    assertEquals(2L, row.get("latency_count"));
  }

  @Test
  void aStretchSettledPartlyByAReportIsOneRunInTheSummary() {
    PartitionLog log = new PartitionLog("orders", 2, 0);
    long[] index = new long[10_000];
    for (int i = 0; i < 6_000; i++) {
      index[i] = log.noteSent(record(i, 1_000));
    }
    for (int i = 0; i < 5_000; i++) {
      log.delivered(index[i], 20_000 + i, 1_000, 1_100);
    }
    Map<String, Object> first = log.report(2_000); // settles the first 5,000
    assertEquals(5_000L, first.get("next_offset"));
    assertEquals(5_000L, first.get("records"));
    for (int i = 6_000; i < 10_000; i++) {
      index[i] = log.noteSent(record(i, 1_000));
    }
    for (int i = 5_000; i < 10_000; i++) {
      log.delivered(index[i], 20_000 + i, 1_000, 1_300);
    }
    log.nextOffset = 10_000;
    Map<String, Object> summary = log.summary(3_000);
    assertEquals(10_000L, summary.get("records"));
    assertEquals(1, runsOf(summary).size());
    assertArrayEquals(new long[] {0, 20_000, 10_000}, runsOf(summary).get(0));
    assertEquals(9_999L, summary.get("last_offset"));
    assertEquals(29_999L, summary.get("last_target_offset"));
    assertEquals(10_000L, summary.get("latency_count"));
    assertEquals(300L, summary.get("latency_max_ms"));
    assertEquals(10_000L, log.report(3_000).get("next_offset"));
  }

  @Test
  void deliveryReportsOnAnotherThreadMeetNotesAndReports() throws Exception {
    PartitionLog log = new PartitionLog("orders", 2, 0);
    int records = 100_000;
    BlockingQueue<Long> sent = new LinkedBlockingQueue<>();
    Thread reports = new Thread(() -> {
      try {
        for (int i = 0; i < records; i++) {
          long index = sent.take();
          log.delivered(index, 7_000 + index, 1_000, 1_001);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    reports.start();
    long settled = 0;
    for (int i = 0; i < records; i++) {
      log.nextOffset = i + 1; // as the writer sets it, before sending
      sent.put(log.noteSent(record(i, 1_000)));
      if (i % 997 == 0) {
        long next = (Long) log.report(2_000).get("next_offset");
        assertTrue(next >= settled && next <= i + 1);
        settled = next;
      }
    }
    reports.join(60_000);
    assertFalse(reports.isAlive(), "the reporting thread did not end within a minute");
    Map<String, Object> summary = log.summary(3_000);
    assertEquals((long) records, summary.get("records"));
    assertEquals(1, runsOf(summary).size());
    assertArrayEquals(new long[] {0, 7_000, records}, runsOf(summary).get(0));
    assertEquals((long) records, summary.get("latency_count"));
  }
}
