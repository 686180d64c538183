package io.mirrorline.writer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.Test;

class ProvenanceTest {
  private static Header[] been(String... hops) {
    Header[] headers = new Header[hops.length + 1];
    headers[0] = new RecordHeader("app", "a:b".getBytes(StandardCharsets.UTF_8));
    for (int i = 0; i < hops.length; i++) {
      headers[i + 1] = new RecordHeader(Provenance.HEADER, hops[i].getBytes(StandardCharsets.UTF_8));
    }
    return headers;
  }

  @Test
  void aHopIsMarkedWithTheSourceClusterAndTopic() {
    Provenance provenance = new Provenance("clusterB", "clusterA", false);
    assertArrayEquals("clusterB:orders".getBytes(StandardCharsets.UTF_8), provenance.mark("orders"));
  }

  @Test
  void byTopicARecordMayReturnToItsClusterUnderAnotherName() {
    Provenance provenance = new Provenance("clusterB", "clusterA", false);
    assertTrue(provenance.hasBeenInTarget(been("clusterA:orders"), "orders"));
    assertFalse(provenance.hasBeenInTarget(been("clusterA:orders"), "orders.replica.replica"));
    assertFalse(provenance.hasBeenInTarget(been(), "orders"));
  }

  @Test
  void byClusterARecordNeverReturnsToAClusterItHasBeenIn() {
    Provenance provenance = new Provenance("clusterB", "clusterA", true);
    assertTrue(provenance.hasBeenInTarget(been("clusterA:orders"), "orders.replica.replica"));
    assertTrue(provenance.hasBeenInTarget(been("clusterC:x", "clusterA:orders"), "anything"));
    // A cluster id that merely starts like the target's is another cluster.
    assertFalse(provenance.hasBeenInTarget(been("clusterAB:orders"), "orders.replica"));
    assertFalse(provenance.hasBeenInTarget(been("clusterC:orders"), "orders.replica"));
  }
}
