package example.mirror;

import java.util.Map;
import org.apache.kafka.connect.mirror.GroupFilter;

/** Checkpoints the groups starting with prefix.filter.allow (every group without it). */
public class PrefixGroupFilter implements GroupFilter {
  private String prefix = "";

  @Override
  public void configure(Map<String, ?> props) {
    Object configured = props.get("prefix.filter.allow");
    prefix = configured == null ? "" : configured.toString();
  }

  @Override
  public boolean shouldReplicateGroup(String group) {
    return group.startsWith(prefix);
  }
}
