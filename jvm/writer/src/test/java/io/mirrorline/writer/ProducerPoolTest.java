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
  void eachTaskSharingAProducerHasItsOwnBufferMemoryWithinAQuarterOfTheHeap() {
    long gib = 1L << 30;
    Map<String, String> defaults = settings("d");
    assertEquals("268435456", ProducerPool.forTasks(defaults, 8, 2 * gib).get("buffer.memory"));
    assertEquals("33554432", ProducerPool.forTasks(defaults, 1, 2 * gib).get("buffer.memory"));
    assertEquals("268435456", ProducerPool.forTasks(defaults, 64, gib).get("buffer.memory"));
    Map<String, String> given = Map.of("buffer.memory", "1000000", "client.id", "g");
    assertEquals("3000000", ProducerPool.forTasks(given, 3, gib).get("buffer.memory"));
    Map<String, String> large = Map.of("buffer.memory", "900000000");
    assertEquals("900000000", ProducerPool.forTasks(large, 4, gib).get("buffer.memory"));
    assertEquals("g", ProducerPool.forTasks(given, 3, gib).get("client.id"));
  }
}
