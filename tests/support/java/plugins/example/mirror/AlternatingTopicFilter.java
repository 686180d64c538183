package example.mirror;

import org.apache.kafka.connect.mirror.TopicFilter;

/** Changes its mind at every question, as a filter that reads a changing catalog may. */
public class AlternatingTopicFilter implements TopicFilter {
  private boolean next = true;

  @Override
  public boolean shouldReplicateTopic(String topic) {
    boolean answer = next;
    next = !next;
    return answer;
  }
}
