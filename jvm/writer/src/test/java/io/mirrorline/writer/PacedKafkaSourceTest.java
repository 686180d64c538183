package io.mirrorline.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

class PacedKafkaSourceTest {
  private static final TopicPartition A = new TopicPartition("orders", 0);
  private static final TopicPartition B = new TopicPartition("orders", 1);
  private static final TopicPartition C = new TopicPartition("orders", 2);

  @Test
  void underTheLimitABatchReadsEverything() {
    Map<TopicPartition, Long> until = Map.of(A, 100L, B, 50L);
    assertSame(until, PacedKafkaSource.limited(Map.of(A, 0L, B, 0L), until, 150));
  }

  @Test
  void theLimitIsSharedInProportionToWhatEachPartitionHolds() {
    Map<TopicPartition, Long> ends = PacedKafkaSource.limited(
        Map.of(A, 1000L, B, 0L, C, 7L), Map.of(A, 1300L, B, 100L, C, 7L), 40);
    assertEquals(1030L, ends.get(A)); // 300 of 400 held: 30 of 40
    assertEquals(10L, ends.get(B)); // 100 of 400: 10
    assertEquals(7L, ends.get(C)); // nothing there: stays
  }

  @Test
  void everyPartitionWithRecordsReadsAtLeastOne() {
    Map<TopicPartition, Long> ends = PacedKafkaSource.limited(
        Map.of(A, 0L, B, 0L), Map.of(A, 1_000_000L, B, 1L), 10);
    assertEquals(1L, ends.get(B));
    assertEquals(9L, ends.get(A));
  }

  @Test
  void aPartitionTheStartDoesNotKnowStaysAtItsEnd() {
    Map<TopicPartition, Long> ends = PacedKafkaSource.limited(
        Map.of(A, 0L), Map.of(A, 100L, B, 40L), 10);
    assertEquals(10L, ends.get(A));
    assertEquals(40L, ends.get(B));
  }
}
