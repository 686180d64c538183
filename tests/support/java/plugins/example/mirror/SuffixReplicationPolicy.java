package example.mirror;

import java.util.Map;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.connect.mirror.ReplicationPolicy;

/** Remote topics end with a marker and the source alias: orders from east is orders_from_east. */
public class SuffixReplicationPolicy implements ReplicationPolicy, Configurable {
  private String marker = "_from_";

  @Override
  public void configure(Map<String, ?> props) {
    Object configured = props.get("replication.policy.marker");
    if (configured != null) {
      marker = configured.toString();
    }
  }

  @Override
  public String formatRemoteTopic(String sourceClusterAlias, String topic) {
    return topic + marker + sourceClusterAlias;
  }

  @Override
  public String topicSource(String topic) {
    int at = topic.lastIndexOf(marker);
    return at <= 0 ? null : topic.substring(at + marker.length());
  }

  @Override
  public String upstreamTopic(String topic) {
    int at = topic.lastIndexOf(marker);
    return at <= 0 ? null : topic.substring(0, at);
  }
}
