package io.mirrorline.writer;

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
    ProducerPool.Lease first = ProducerPool.shared("a->b", settings("a"));
    ProducerPool.Lease second = ProducerPool.shared("a->b", settings("a"));
    ProducerPool.Lease other = ProducerPool.shared("a->b", settings("b"));
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
    ProducerPool.Lease one = ProducerPool.shared("a->b", settings("same"));
    ProducerPool.Lease another = ProducerPool.shared("a->c", settings("same"));
    try {
      assertNotSame(one.producer(), another.producer());
    } finally {
      one.discard("test");
      another.discard("test");
    }
  }

  @Test
  void aDiscardedSharedProducerIsReplacedAndALateDiscardKeepsItsSuccessor() {
    ProducerPool.Lease failed = ProducerPool.shared("a->b", settings("c"));
    ProducerPool.Lease late = ProducerPool.shared("a->b", settings("c"));
    failed.discard("test");
    ProducerPool.Lease next = ProducerPool.shared("a->b", settings("c"));
    try {
      assertNotSame(failed.producer(), next.producer());
      // A second task that used the failed producer discards it too, later.
      late.discard("test");
      assertSame(next.producer(), ProducerPool.shared("a->b", settings("c")).producer());
    } finally {
      next.discard("test");
    }
  }
}
