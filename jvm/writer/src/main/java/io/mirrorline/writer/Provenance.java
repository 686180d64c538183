package io.mirrorline.writer;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.kafka.common.header.Header;

/**
 * Provenance headers, for replication policies whose topic names cannot reveal loops.
 *
 * <p>Each hop adds {@code mirrorline.provenance = <source cluster id>:<source topic>};
 * a record whose provenance already names the target cluster and the remote topic
 * has been there before and is not written again (see
 * {@code src/mirrorline/engine/provenance.py} for the whole rule).
 */
final class Provenance implements Serializable {
  private static final long serialVersionUID = 1L;
  static final String HEADER = "mirrorline.provenance";

  final String sourceClusterId;
  final String targetClusterId;

  Provenance(String sourceClusterId, String targetClusterId) {
    this.sourceClusterId = sourceClusterId;
    this.targetClusterId = targetClusterId;
  }

  byte[] mark(String sourceTopic) {
    return (sourceClusterId + ":" + sourceTopic).getBytes(StandardCharsets.UTF_8);
  }

  boolean hasBeenInTarget(Header[] headers, String remoteTopic) {
    byte[] there = (targetClusterId + ":" + remoteTopic).getBytes(StandardCharsets.UTF_8);
    for (Header h : headers) {
      if (HEADER.equals(h.key()) && Arrays.equals(h.value(), there)) {
        return true;
      }
    }
    return false;
  }
}
