package io.mirrorline.writer;

import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.Test;

class ProducerPoolTest {
  // A producer connects at its first send only: nothing needs to listen here.
  private static Map<String, String> settings(String clientId) {
    return Map.of("bootstrap.servers", "127.0.0.1:1", "client.id", clientId);
  }

  @Test
  void realTimeTasksShareOneProducerPerSettings() {
    KafkaProducer<byte[], byte[]> first = ProducerPool.share(settings("a"));
    KafkaProducer<byte[], byte[]> second = ProducerPool.share(settings("a"));
    KafkaProducer<byte[], byte[]> other = ProducerPool.share(settings("b"));
    try {
      assertSame(first, second);
      assertNotSame(first, other);
    } finally {
      ProducerPool.discardShared(settings("a"), first);
      ProducerPool.discardShared(settings("b"), other);
    }
  }

  @Test
  void aDiscardedSharedProducerIsReplacedAndALateDiscardKeepsItsSuccessor() {
    KafkaProducer<byte[], byte[]> failed = ProducerPool.share(settings("c"));
    ProducerPool.discardShared(settings("c"), failed);
    KafkaProducer<byte[], byte[]> next = ProducerPool.share(settings("c"));
    try {
      assertNotSame(failed, next);
      // A second task that used the failed producer discards it too, later.
      ProducerPool.discardShared(settings("c"), failed);
      assertSame(next, ProducerPool.share(settings("c")));
    } finally {
      ProducerPool.discardShared(settings("c"), next);
    }
  }
}
