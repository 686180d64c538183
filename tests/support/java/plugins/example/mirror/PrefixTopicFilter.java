package example.mirror;

import java.util.Map;
import org.apache.kafka.connect.mirror.TopicFilter;

/** Replicates the topics starting with prefix.filter.allow, a setting it requires. */
public class PrefixTopicFilter implements TopicFilter {
  private String prefix;

  @Override
  public void configure(Map<String, ?> props) {
    Object configured = props.get("prefix.filter.allow");
    if (configured == null) {
      throw new IllegalArgumentException("prefix.filter.allow is required");
    }
    prefix = configured.toString();
  }

  @Override
  public boolean shouldReplicateTopic(String topic) {
    return topic.startsWith(prefix);
  }
}
