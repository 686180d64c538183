package io.mirrorline.writer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * Everything a task needs to write one micro-batch, as the driver describes it in JSON.
 *
 * <p>Built on the driver from the JSON that Mirrorline's Python side writes
 * ({@code engine/batch_writer.py}) and shipped to the executors with the task.
 * Client settings use Apache Kafka's Java names and may hold secrets: nothing
 * here is ever logged or put into an exception message.
 */
public final class WriteSpec implements Serializable {
  private static final long serialVersionUID = 1L;

  final String flow;
  final Map<String, String> producer;
  final Map<String, String> remoteTopics;
  /** Null for policies that see loops from topic names. */
  final Provenance provenance;
  final boolean tolerateRefusals;
  /** Null when refused records are only counted. */
  final String deadLetterTopic;
  /** Remote topic to its max.message.bytes: larger records are refused before sending. */
  final Map<String, Integer> sizeLimits;
  /** The source consumer's settings (Java names), for {@link SourceReader}. */
  final Map<String, String> source;
  /** Most tasks of one batch; 0: a task per source partition. */
  final int tasksMax;
  /** The tasks one executor runs at once; 0: not known. */
  final int taskSlots;
  /** Most source partitions one executor writes at once: their tasks share its producer. */
  final int partitionsPerExecutor;
  /** Null in at-least-once mode. */
  final ExactlyOnce exactlyOnce;
  /** The flow's single message transforms; null when records are copied as they are. */
  final TransformChain.Spec transforms;

  /** Where exactly-once tasks keep their progress (see {@link ExactlyOnceWriter}). */
  static final class ExactlyOnce implements Serializable {
    private static final long serialVersionUID = 1L;
    final String progressTopic;
    final String positionGroup;
    final Map<String, String> consumer;

    ExactlyOnce(String progressTopic, String positionGroup, Map<String, String> consumer) {
      this.progressTopic = progressTopic;
      this.positionGroup = positionGroup;
      this.consumer = consumer;
    }
  }

  private WriteSpec(JsonNode json) {
    flow = json.get("flow").asText();
    producer = strings(json.get("producer"));
    source = strings(json.get("source"));
    tasksMax = json.path("tasks_max").asInt(0);
    taskSlots = json.path("task_slots").asInt(0);
    partitionsPerExecutor = json.path("partitions_per_executor").asInt(1);
    remoteTopics = strings(json.get("remote_topics"));
    JsonNode prov = json.path("provenance");
    provenance = prov.isObject()
        ? new Provenance(
            prov.get("source_cluster_id").asText(),
            prov.get("target_cluster_id").asText(),
            prov.path("by_cluster").asBoolean(false))
        : null;
    tolerateRefusals = json.path("tolerate_refusals").asBoolean(false);
    JsonNode dlq = json.path("dead_letter_topic");
    deadLetterTopic = dlq.isTextual() && !dlq.asText().isEmpty() ? dlq.asText() : null;
    Map<String, Integer> limits = new HashMap<>();
    JsonNode sizes = json.path("size_limits");
    for (Iterator<Map.Entry<String, JsonNode>> it = sizes.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      limits.put(e.getKey(), e.getValue().asInt());
    }
    sizeLimits = Collections.unmodifiableMap(limits);
    JsonNode eos = json.path("exactly_once");
    transforms = TransformChain.Spec.parse(json.path("transforms"));
    exactlyOnce = eos.isObject()
        ? new ExactlyOnce(
            eos.get("progress_topic").asText(),
            eos.get("position_group").asText(),
            strings(eos.get("consumer")))
        : null;
  }

  static WriteSpec parse(String json) {
    try {
      return new WriteSpec(new ObjectMapper().readTree(json));
    } catch (Exception e) {
      // The text holds client settings, possibly secrets: never quote it.
      throw new IllegalArgumentException("malformed write spec: " + e.getClass().getSimpleName());
    }
  }

  String remoteTopic(String sourceTopic) {
    String remote = remoteTopics.get(sourceTopic);
    if (remote == null) {
      throw new DeliveryFailed("flow " + flow + ": no remote topic known for source topic " + sourceTopic);
    }
    return remote;
  }

  private static Map<String, String> strings(JsonNode node) {
    Map<String, String> out = new HashMap<>();
    if (node != null) {
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        out.put(e.getKey(), e.getValue().asText());
      }
    }
    return Collections.unmodifiableMap(out);
  }
}
