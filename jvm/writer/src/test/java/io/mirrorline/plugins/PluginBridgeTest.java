package io.mirrorline.plugins;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class PluginBridgeTest {
  @Test
  void fieldsSurviveTheirSeparatorsEscapesAndNull() {
    String awkward = "a\tb\nc\\d\re";
    String line = String.join("\t", "call", PluginBridge.escape(awkward), "\\N", "");
    assertEquals(Arrays.asList("call", awkward, null, ""), PluginBridge.decode(line));
  }

  @Test
  void aClassIsLoadedConfiguredAndAsked() {
    PluginBridge bridge = new PluginBridge();
    String policy = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy";
    String load = "load\t1\treplication-policy\t" + policy + "\t0\treplication.policy.separator\t_";
    assertEquals("ok", bridge.answer(load));
    assertEquals("ok\teast_orders", bridge.answer("call\t1\tformatRemoteTopic\teast\torders"));
    assertEquals("ok\t\\N", bridge.answer("call\t1\ttopicSource\torders"));
    assertEquals("ok\ttrue", bridge.answer("call\t1\tisInternalTopic\t__consumer_offsets"));
  }

  @Test
  void problemsAreAnsweredNotThrown() {
    PluginBridge bridge = new PluginBridge();
    String policy = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy";
    List<String> wrong = PluginBridge.decode(bridge.answer("load\t1\tgroup-filter\t" + policy + "\t0"));
    assertEquals(
        List.of("error", "interface", "does not implement org.apache.kafka.connect.mirror.GroupFilter"),
        wrong);
    assertEquals("error", PluginBridge.decode(bridge.answer("load\t2\tgroup-filter\tno.Such\t0")).get(0));
    assertEquals("protocol", PluginBridge.decode(bridge.answer("call\t9\tshouldReplicateGroup\tg")).get(1));
    assertEquals("protocol", PluginBridge.decode(bridge.answer("load\t3")).get(1));
  }
}
