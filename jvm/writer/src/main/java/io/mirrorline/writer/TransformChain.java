package io.mirrorline.writer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

/**
 * A flow's single message transforms, run on each record the way MirrorMaker 2 runs them.
 *
 * <p>MM2 hands every record to Kafka Connect as a {@link SourceRecord}: topic the remote
 * topic (the replication policy's name), the source partition number, key with the
 * optional-bytes schema, value with the bytes schema, the original timestamp, and each
 * header as bytes. The transforms run in the order {@code transforms} lists them, each
 * only where its predicate (negated or not) says so; one that returns null drops the
 * record. Connect then turns the result back into bytes with MM2's converters: the byte
 * array converter for key and value, which accepts bytes and nothing else, and the
 * header converter {@code header.converter} names: the byte array converter (MM2's
 * default) or Connect's {@code SimpleHeaderConverter}, which writes every header as
 * text (bytes as Base64). This class does the same with Connect's own classes, found on
 * the JVM's classpath (the connect-transforms jar set, and a user's jars from
 * {@code plugin.path}).
 *
 * <p>A chain holds configured instances, which are not serializable: each task starts
 * its own from the {@link Spec} and closes it at the end. Writers of a flow without
 * transforms hold none and pay nothing per record.
 */
final class TransformChain implements AutoCloseable {
  static final String BYTE_ARRAY_CONVERTER = "org.apache.kafka.connect.converters.ByteArrayConverter";

  /** One transform or predicate as the file configures it. */
  static final class Plugin implements Serializable {
    private static final long serialVersionUID = 1L;
    final String name;
    final String className;
    final Map<String, String> settings;

    Plugin(String name, String className, Map<String, String> settings) {
      this.name = name;
      this.className = className;
      this.settings = settings;
    }
  }

  /** A transform with the predicate that guards it (null: always applied). */
  static final class Stage implements Serializable {
    private static final long serialVersionUID = 1L;
    final Plugin transform;
    final String predicate;
    final boolean negate;

    Stage(Plugin transform, String predicate, boolean negate) {
      this.transform = transform;
      this.predicate = predicate;
      this.negate = negate;
    }
  }

  /** The chain as the driver describes it; shipped to executors with the write spec. */
  static final class Spec implements Serializable {
    private static final long serialVersionUID = 1L;
    final List<Stage> stages;
    final Map<String, Plugin> predicates;
    final String headerConverter;

    Spec(List<Stage> stages, Map<String, Plugin> predicates, String headerConverter) {
      this.stages = stages;
      this.predicates = predicates;
      this.headerConverter = headerConverter;
    }

    /**
     * The chain of a write spec's {@code transforms} object; null when records are copied
     * as they are (no transform, and headers kept as bytes).
     */
    static Spec parse(JsonNode json) {
      if (json == null || !json.isObject()) {
        return null;
      }
      String converter = json.path("header_converter").asText(BYTE_ARRAY_CONVERTER);
      Map<String, Plugin> predicates = new LinkedHashMap<>();
      for (JsonNode p : json.path("predicates")) {
        Plugin plugin = plugin(p);
        predicates.put(plugin.name, plugin);
      }
      List<Stage> stages = new ArrayList<>();
      for (JsonNode t : json.path("transforms")) {
        JsonNode predicate = t.path("predicate");
        stages.add(new Stage(plugin(t), predicate.isTextual() ? predicate.asText() : null,
            t.path("negate").asBoolean(false)));
      }
      if (stages.isEmpty() && converter.equals(BYTE_ARRAY_CONVERTER)) {
        return null;
      }
      return new Spec(stages, predicates, converter);
    }

    private static Plugin plugin(JsonNode json) {
      Map<String, String> settings = new HashMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = json.path("settings").fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        settings.put(e.getKey(), e.getValue().asText());
      }
      return new Plugin(json.get("name").asText(), json.get("class").asText(),
          Collections.unmodifiableMap(settings));
    }
  }

  /** A transform, a predicate or a converter failed on a record; names which. */
  static final class Failed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Failed(String what, Throwable cause) {
      super(what + " failed: " + cause.getClass().getSimpleName()
          + (cause.getMessage() == null ? "" : ": " + cause.getMessage()), cause);
    }
  }

  /** A chain could not be started: a class is missing or refuses its settings. */
  static final class Unusable extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Unusable(String message) {
      super(message);
    }
  }

  private final String[] names;
  private final Transformation<SourceRecord>[] transforms;
  private final Predicate<SourceRecord>[] guards; // null entries: no predicate
  private final boolean[] negate;
  private final List<Predicate<SourceRecord>> predicates = new ArrayList<>();
  private final HeaderConverter headerConverter; // null: the byte array converter's rule

  @SuppressWarnings({"unchecked", "rawtypes"})
  private TransformChain(Spec spec) {
    int n = spec.stages.size();
    names = new String[n];
    transforms = new Transformation[n];
    guards = new Predicate[n];
    negate = new boolean[n];
    try {
      Map<String, Predicate<SourceRecord>> byName = new HashMap<>();
      for (Plugin p : spec.predicates.values()) {
        Predicate<SourceRecord> predicate = configured(p, "predicates", Predicate.class);
        predicates.add(predicate);
        byName.put(p.name, predicate);
      }
      for (int i = 0; i < n; i++) {
        Stage stage = spec.stages.get(i);
        names[i] = stage.transform.name;
        transforms[i] = configured(stage.transform, "transforms", Transformation.class);
        if (stage.predicate != null) {
          guards[i] = byName.get(stage.predicate);
          if (guards[i] == null) {
            throw new Unusable("transforms." + names[i] + ".predicate: no predicate named "
                + stage.predicate + " in predicates");
          }
        }
        negate[i] = stage.negate;
      }
      headerConverter = spec.headerConverter.equals(BYTE_ARRAY_CONVERTER)
          ? null
          : configured(new Plugin("header.converter", spec.headerConverter, Map.of()),
              null, HeaderConverter.class);
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /** Start the chain; {@link Unusable} names the transform or predicate that cannot start. */
  static TransformChain start(Spec spec) {
    return spec == null ? null : new TransformChain(spec);
  }

  /**
   * Problems of a chain, one line each naming its setting prefix; none if it starts.
   * The configuration check runs this for each flow's chain ({@link #main}).
   */
  static List<String> problems(Spec spec) {
    try {
      new TransformChain(spec).close();
      return List.of();
    } catch (Unusable e) {
      return List.of(e.getMessage());
    }
  }

  /**
   * Check chains as {@code mirrorline config check} does: reads a JSON array of chains
   * (write-spec {@code transforms} objects) on standard input and prints a JSON array
   * with the first problem of each chain, or null for a chain that starts.
   */
  public static void main(String[] args) throws Exception {
    ObjectMapper json = new ObjectMapper();
    JsonNode chains = json.readTree(System.in);
    List<String> out = new ArrayList<>();
    for (JsonNode chain : chains) {
      Spec spec = Spec.parse(chain);
      List<String> found = spec == null ? List.of() : problems(spec);
      out.add(found.isEmpty() ? null : found.get(0));
    }
    System.out.println(json.writeValueAsString(out));
  }

  private <T> T configured(Plugin plugin, String prefix, Class<T> kind) {
    String where = prefix == null ? plugin.name : prefix + "." + plugin.name;
    Object instance;
    try {
      Class<?> cls = Class.forName(plugin.className, true,
          Thread.currentThread().getContextClassLoader());
      if (!kind.isAssignableFrom(cls)) {
        throw new Unusable(where + ".type: " + plugin.className + " is not a Kafka Connect "
            + kind.getSimpleName());
      }
      instance = cls.getDeclaredConstructor().newInstance();
    } catch (ClassNotFoundException | NoClassDefFoundError e) {
      throw new Unusable(where + ".type: class " + plugin.className + " not found (not a Kafka "
          + "Connect class, nor in a jar of plugin.path)");
    } catch (ReflectiveOperationException e) {
      throw new Unusable(where + ".type: " + plugin.className + " cannot be created: " + e);
    }
    T typed = kind.cast(instance);
    Map<String, Object> settings = new HashMap<>(plugin.settings);
    try {
      if (typed instanceof HeaderConverter) {
        ((HeaderConverter) typed).configure(settings);
      } else if (typed instanceof Transformation) {
        ((Transformation<?>) typed).configure(settings);
      } else {
        ((Predicate<?>) typed).configure(settings);
      }
    } catch (RuntimeException e) {
      closeQuietly(typed);
      throw new Unusable(where + ": " + e.getMessage());
    }
    return typed;
  }

  /**
   * The copy of {@code record} for topic {@code remote}, transformed, as the producer sends
   * it; null when a transform dropped it. {@link Failed} names what failed.
   */
  ProducerRecord<byte[], byte[]> apply(io.mirrorline.writer.SourceRecord record, String remote,
      org.apache.kafka.common.header.Header[] headers) {
    ConnectHeaders connectHeaders = new ConnectHeaders();
    for (org.apache.kafka.common.header.Header h : headers) {
      connectHeaders.addBytes(h.key(), h.value());
    }
    SourceRecord r = new SourceRecord(null, null, remote, record.partition,
        Schema.OPTIONAL_BYTES_SCHEMA, record.key, Schema.BYTES_SCHEMA, record.value,
        record.timestampMs, connectHeaders);
    for (int i = 0; i < transforms.length && r != null; i++) {
      try {
        if (guards[i] == null || negate[i] != guards[i].test(r)) {
          r = transforms[i].apply(r);
        }
      } catch (RuntimeException e) {
        throw new Failed("transform " + names[i], e);
      }
    }
    return r == null ? null : producerRecord(r);
  }

  private ProducerRecord<byte[], byte[]> producerRecord(SourceRecord r) {
    String topic = r.topic();
    byte[] key = bytes(r.keySchema(), r.key(), "key converter");
    byte[] value = bytes(r.valueSchema(), r.value(), "value converter");
    RecordHeaders out = new RecordHeaders();
    for (Header h : r.headers()) {
      byte[] bytes;
      if (headerConverter == null) {
        bytes = bytes(h.schema(), h.value(), "header converter (header " + h.key() + ")");
      } else {
        try {
          bytes = headerConverter.fromConnectHeader(topic, h.key(), h.schema(), h.value());
        } catch (RuntimeException e) {
          throw new Failed("header converter (header " + h.key() + ")", e);
        }
      }
      out.add(new RecordHeader(h.key(), bytes));
    }
    Long ts = r.timestamp();
    return new ProducerRecord<>(topic, r.kafkaPartition(), ts == null || ts < 0 ? null : ts,
        key, value, out);
  }

  /** Connect's byte array converter: bytes (or a byte buffer) in, bytes out, nothing else. */
  private static byte[] bytes(Schema schema, Object value, String what) {
    if (schema != null && schema.type() != Schema.Type.BYTES) {
      throw new Failed(what, new IllegalArgumentException(
          "the byte array converter takes bytes, not " + schema.type()));
    }
    if (value == null || value instanceof byte[]) {
      return (byte[]) value;
    }
    if (value instanceof ByteBuffer) {
      ByteBuffer buffer = ((ByteBuffer) value).duplicate();
      buffer.rewind();
      byte[] out = new byte[buffer.remaining()];
      buffer.get(out);
      return out;
    }
    throw new Failed(what, new IllegalArgumentException(
        "the byte array converter takes bytes, not " + value.getClass().getName()));
  }

  @Override
  public void close() {
    for (Transformation<SourceRecord> t : transforms) {
      closeQuietly(t);
    }
    for (Predicate<SourceRecord> p : predicates) {
      closeQuietly(p);
    }
    closeQuietly(headerConverter);
  }

  private static void closeQuietly(Object closeable) {
    if (closeable instanceof AutoCloseable) {
      try {
        ((AutoCloseable) closeable).close();
      } catch (Exception e) {
        // A transform that fails to close holds nothing Mirrorline needs.
      }
    }
  }
}
