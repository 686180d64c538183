package io.mirrorline.writer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
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
      int index = log.noteSent(record(offset, 1_000 + offset));
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
}
