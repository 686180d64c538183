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
 * (with {@code byCluster}: the target cluster, under any topic) has been there before
 * and is not written again (see {@code src/mirrorline/engine/provenance.py} for the
 * whole rule).
 */
final class Provenance implements Serializable {
  private static final long serialVersionUID = 1L;
  static final String HEADER = "mirrorline.provenance";

  final String sourceClusterId;
  final String targetClusterId;
  final boolean byCluster;

  Provenance(String sourceClusterId, String targetClusterId, boolean byCluster) {
    this.sourceClusterId = sourceClusterId;
    this.targetClusterId = targetClusterId;
    this.byCluster = byCluster;
  }

  byte[] mark(String sourceTopic) {
    return (sourceClusterId + ":" + sourceTopic).getBytes(StandardCharsets.UTF_8);
  }

  boolean hasBeenInTarget(Header[] headers, String remoteTopic) {
    byte[] there =
        (targetClusterId + ":" + (byCluster ? "" : remoteTopic)).getBytes(StandardCharsets.UTF_8);
    for (Header h : headers) {
      if (HEADER.equals(h.key()) && matches(h.value(), there)) {
        return true;
      }
    }
    return false;
  }

  private boolean matches(byte[] value, byte[] there) {
    if (value == null) {
      return false;
    }
    if (!byCluster) {
      return Arrays.equals(value, there);
    }
    return value.length >= there.length
        && Arrays.equals(value, 0, there.length, there, 0, there.length);
  }
}
