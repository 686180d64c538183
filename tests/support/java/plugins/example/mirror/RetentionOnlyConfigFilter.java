package example.mirror;

import org.apache.kafka.connect.mirror.ConfigPropertyFilter;

/** Copies retention settings only, and their source defaults too. */
public class RetentionOnlyConfigFilter implements ConfigPropertyFilter {
  @Override
  public boolean shouldReplicateConfigProperty(String prop) {
    return prop.startsWith("retention.");
  }

  @Override
  public boolean shouldReplicateSourceDefault(String prop) {
    return true;
  }
}
