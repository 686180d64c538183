package example.mirror;

import org.apache.kafka.connect.mirror.ReplicationPolicy;

/** Numbers its answers, so that a test sees which questions reached it; throws on "boom". */
public class CountingPolicy implements ReplicationPolicy {
  private int asked;

  @Override
  public String formatRemoteTopic(String sourceClusterAlias, String topic) {
    if (topic.equals("boom")) {
      throw new IllegalStateException("no name for boom");
    }
    asked++;
    return sourceClusterAlias + "." + topic + "." + asked;
  }

  @Override
  public String topicSource(String topic) {
    return null;
  }

  @Override
  public String upstreamTopic(String topic) {
    return null;
  }
}
