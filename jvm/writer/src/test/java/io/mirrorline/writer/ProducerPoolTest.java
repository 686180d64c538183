package io.mirrorline.writer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.Map;
import org.junit.jupiter.api.Test;

class ProducerPoolTest {
  // A producer connects at its first send only: nothing needs to listen here.
  private static Map<String, String> settings(String clientId) {
    return Map.of("bootstrap.servers", "127.0.0.1:1", "client.id", clientId);
  }

  @Test
  void tasksShareOneProducerPerFlowAndSettings() {
    ProducerPool.Lease first = ProducerPool.shared("a->b", settings("a"), 1);
    ProducerPool.Lease second = ProducerPool.shared("a->b", settings("a"), 1);
    ProducerPool.Lease other = ProducerPool.shared("a->b", settings("b"), 1);
    try {
      assertSame(first.producer(), second.producer());
      assertNotSame(first.producer(), other.producer());
    } finally {
      first.discard("test");
      other.discard("test");
    }
  }

  @Test
  void flowsNeverShareAProducer() {
    ProducerPool.Lease one = ProducerPool.shared("a->b", settings("same"), 1);
    ProducerPool.Lease another = ProducerPool.shared("a->c", settings("same"), 1);
    try {
      assertNotSame(one.producer(), another.producer());
    } finally {
      one.discard("test");
      another.discard("test");
    }
  }

  @Test
  void aDiscardedSharedProducerIsReplacedAndALateDiscardKeepsItsSuccessor() {
    ProducerPool.Lease failed = ProducerPool.shared("a->b", settings("c"), 1);
    ProducerPool.Lease late = ProducerPool.shared("a->b", settings("c"), 1);
    failed.discard("test");
    ProducerPool.Lease next = ProducerPool.shared("a->b", settings("c"), 1);
    try {
      assertNotSame(failed.producer(), next.producer());
      // A second task that used the failed producer discards it too, later.
      late.discard("test");
      assertSame(next.producer(), ProducerPool.shared("a->b", settings("c"), 1).producer());
    } finally {
      next.discard("test");
    }
  }

  @Test
  void aSharedProducerHasRoomForEachTasksOpenAndInFlightBatchesWithinAQuarterOfTheHeap() {
    long gib = 1L << 30;
    Map<String, String> mirrorline = Map.of("batch.size", "1000000",
        "max.in.flight.requests.per.connection", "5", "client.id", "m");
    // Eight tasks: six batches of 1,000,000 bytes each.
    assertEquals("48000000", ProducerPool.forPartitions(mirrorline, 8, 2 * gib).get("buffer.memory"));
    // One task: its six batches, not Kafka's 32 MiB.
    assertEquals("6000000", ProducerPool.forPartitions(mirrorline, 1, 2 * gib).get("buffer.memory"));
    assertEquals("67108864", ProducerPool.forPartitions(mirrorline, 64, 256L << 20).get("buffer.memory"));
    // Never less than the largest request, however small the heap or the batches.
    assertEquals("1048576", ProducerPool.forPartitions(mirrorline, 8, 1L << 20).get("buffer.memory"));
    Map<String, String> bigRecords = Map.of("batch.size", "2000", "max.request.size", "5000000");
    assertEquals("5000000", ProducerPool.forPartitions(bigRecords, 1, gib).get("buffer.memory"));
    // Kafka's defaults: 16,384-byte batches, five in flight.
    assertEquals("6291456", ProducerPool.forPartitions(settings("d"), 64, gib).get("buffer.memory"));
    // A buffer given is a floor.
    Map<String, String> given = Map.of("buffer.memory", "900000000", "batch.size", "1000000");
    assertEquals("900000000", ProducerPool.forPartitions(given, 4, gib).get("buffer.memory"));
    Map<String, String> small = Map.of("buffer.memory", "1000", "batch.size", "1000000");
    assertEquals("30000000", ProducerPool.forPartitions(small, 5, gib).get("buffer.memory"));
    Map<String, String> oneInFlight = Map.of("batch.size", "10000000",
        "max.in.flight.requests.per.connection", "1");
    assertEquals("60000000", ProducerPool.forPartitions(oneInFlight, 3, gib).get("buffer.memory"));
    assertEquals("m", ProducerPool.forPartitions(mirrorline, 3, gib).get("client.id"));
  }
}
