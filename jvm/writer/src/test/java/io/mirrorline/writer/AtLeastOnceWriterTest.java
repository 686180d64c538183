package io.mirrorline.writer;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.Test;

class AtLeastOnceWriterTest {
  // Nothing listens on port 1: a send waits 300 ms for the topic's metadata, then fails.
  private static final String PRODUCER = "{\"bootstrap.servers\":\"127.0.0.1:1\","
      + "\"enable.idempotence\":\"true\",\"acks\":\"all\",\"max.block.ms\":\"300\"}";

  private static WriteSpec spec(String flow) {
    return WriteSpec.parse("{\"flow\":\"" + flow + "\",\"producer\":" + PRODUCER
        + ",\"source\":{},\"remote_topics\":{\"orders\":\"east.orders\"}}");
  }

  private static SourceRecord record(long offset) {
    return new SourceRecord("orders", 0, offset, null, new byte[] {1}, 0L, new Header[0]);
  }

  @Test
  void theFirstFailedDeliveryClosesTheSharedProducerBeforeAnotherRecordIsSent() {
    WriteSpec spec = spec("a->b");
    AtLeastOnceWriter writer = new AtLeastOnceWriter(spec);
    writer.open();
    ProducerPool.Lease otherTask = ProducerPool.shared(spec.flow, spec.producer, spec.partitionsPerExecutor);
    try {
      writer.accept(record(7)); // its delivery fails: no broker

      DeliveryFailed stopped = assertThrows(DeliveryFailed.class, () -> writer.accept(record(8)));
      assertTrue(stopped.getMessage().contains("the copy of orders[0] offset 7 to east.orders was not written"),
          stopped.getMessage());
      String why = otherTask.discardedBecause();
      assertNotNull(why, "the producer the executor's other tasks share is closed");
      assertTrue(why.contains("offset 7"), why);
      ProducerPool.Lease next = ProducerPool.shared(spec.flow, spec.producer, spec.partitionsPerExecutor);
      assertNotSame(otherTask.producer(), next.producer());
      next.discard("test");
    } finally {
      writer.abort();
    }
  }

  @Test
  void aTaskWhoseSharedProducerAnotherTaskClosedSaysWhichFailureClosedIt() {
    WriteSpec spec = spec("c->d");
    AtLeastOnceWriter failing = new AtLeastOnceWriter(spec);
    AtLeastOnceWriter other = new AtLeastOnceWriter(spec);
    failing.open();
    other.open();
    try {
      failing.accept(record(7)); // its delivery fails and closes the shared producer

      DeliveryFailed stopped = assertThrows(DeliveryFailed.class, () -> other.accept(record(3)));
      assertTrue(stopped.getMessage().startsWith("flow c->d: the executor's producer was closed after "
          + "the copy of orders[0] offset 7 to east.orders was not written"), stopped.getMessage());
    } finally {
      failing.abort();
      other.abort();
    }
  }
}
