package io.mirrorline.writer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.common.config.ConfigDef;
import org.junit.jupiter.api.Test;

class TransformChainTest {
  private static final String SMT = "org.apache.kafka.connect.transforms.";
  private static final String SIMPLE = "org.apache.kafka.connect.storage.SimpleHeaderConverter";

  /** A transform of a user's own that fails on every record. */
  public static final class Throws implements Transformation<SourceRecord> {
    @Override
    public SourceRecord apply(SourceRecord record) {
      throw new IllegalStateException("cannot handle " + record.topic());
    }

    @Override
    public ConfigDef config() {
      return new ConfigDef();
    }

    @Override
    public void configure(Map<String, ?> configs) {}

    @Override
    public void close() {}
  }

  private static TransformChain.Spec spec(String json) throws Exception {
    return TransformChain.Spec.parse(new ObjectMapper().readTree(json.replace('\'', '"')));
  }

  private static io.mirrorline.writer.SourceRecord record(long offset, Header... headers) {
    return new io.mirrorline.writer.SourceRecord("orders", 2, offset, bytes("k"), bytes("v"),
        1_700_000_000_000L, headers);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String text(ProducerRecord<byte[], byte[]> r, String header) {
    Header h = r.headers().lastHeader(header);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }

  private static final String MM2_CHAIN = "{'transforms': ["
      + "{'name': 'tag', 'class': '" + SMT + "InsertHeader', 'settings':"
      + " {'header': 'origin', 'value.literal': 'east'}},"
      + "{'name': 'strip', 'class': '" + SMT + "DropHeaders', 'settings': {'headers': 'secret'}},"
      + "{'name': 'only', 'class': '" + SMT + "Filter', 'settings': {},"
      + " 'predicate': 'marked', 'negate': false},"
      + "{'name': 'route', 'class': '" + SMT + "RegexRouter', 'settings':"
      + " {'regex': 'a[.](.*)', 'replacement': 'copy-$1'}}],"
      + " 'predicates': [{'name': 'marked', 'class': '" + SMT + "predicates.HasHeaderKey',"
      + " 'settings': {'name': 'skipme'}}],"
      + " 'header_converter': '" + SIMPLE + "'}";

  @Test
  void noTransformsAndByteHeadersMeanNoChainAtAll() throws Exception {
    assertNull(spec("{'transforms': [], 'predicates': []}"));
    assertNull(TransformChain.Spec.parse(null));
    assertNull(TransformChain.start(null));
  }

  @Test
  void aRecordGoesThroughTheChainAsMirrorMakerHandsItToConnect() throws Exception {
    try (TransformChain chain = TransformChain.start(spec(MM2_CHAIN))) {
      byte[] raw = {(byte) 0xff, 0, 1};
      ProducerRecord<byte[], byte[]> out = chain.apply(
          record(5, new RecordHeader("secret", bytes("s")), new RecordHeader("bin", raw)),
          "a.orders", new Header[] {new RecordHeader("secret", bytes("s")),
              new RecordHeader("bin", raw)});
      assertEquals("copy-orders", out.topic());
      assertEquals(2, out.partition());
      assertEquals(1_700_000_000_000L, out.timestamp());
      assertArrayEquals(bytes("k"), out.key());
      assertArrayEquals(bytes("v"), out.value());
      assertNull(out.headers().lastHeader("secret"));
      assertEquals("east", text(out, "origin"));
      // SimpleHeaderConverter writes bytes as Base64 text, as MM2 does with it.
      assertEquals(Base64.getEncoder().encodeToString(raw), text(out, "bin"));
      Header[] marked = {new RecordHeader("skipme", bytes("1"))};
      assertNull(chain.apply(record(6, marked), "a.orders", marked), "the filter drops it");
    }
  }

  @Test
  void theByteArrayHeaderConverterRefusesATextHeaderAsMirrorMakerDoes() throws Exception {
    String chain = MM2_CHAIN.replace(SIMPLE, TransformChain.BYTE_ARRAY_CONVERTER);
    try (TransformChain c = TransformChain.start(spec(chain))) {
      TransformChain.Failed failed = assertThrows(TransformChain.Failed.class,
          () -> c.apply(record(1), "a.orders", new Header[0]));
      assertTrue(failed.getMessage().startsWith("header converter (header origin) failed"),
          failed.getMessage());
      // Bytes stay bytes, and a record without transforms' headers passes unchanged.
      String dropOnly = "{'transforms': [{'name': 'strip', 'class': '" + SMT + "DropHeaders',"
          + " 'settings': {'headers': 'x'}}]}";
      try (TransformChain d = TransformChain.start(spec(dropOnly))) {
        Header[] hs = {new RecordHeader("bin", new byte[] {(byte) 0xff})};
        ProducerRecord<byte[], byte[]> out = d.apply(record(1, hs), "orders", hs);
        assertArrayEquals(new byte[] {(byte) 0xff}, out.headers().lastHeader("bin").value());
        assertEquals("orders", out.topic());
      }
    }
  }

  @Test
  void aThrowingTransformIsNamed() throws Exception {
    String chain = "{'transforms': [{'name': 'bad', 'class': '" + Throws.class.getName()
        + "', 'settings': {}}]}";
    try (TransformChain c = TransformChain.start(spec(chain))) {
      TransformChain.Failed failed = assertThrows(TransformChain.Failed.class,
          () -> c.apply(record(1), "orders", new Header[0]));
      assertEquals("transform bad failed: IllegalStateException: cannot handle orders",
          failed.getMessage());
      Refusal refusal = Refusal.transformFailed(record(7), "orders", failed);
      assertEquals("the record from orders[2] offset 7: transform bad failed: "
          + "IllegalStateException: cannot handle orders", refusal.describe());
    }
  }

  @Test
  void problemsNameTheTransformAndTheKey() throws Exception {
    assertEquals(List.of(), TransformChain.problems(spec(MM2_CHAIN)));
    String unknown = "{'transforms': [{'name': 'x', 'class': 'no.such.Smt', 'settings': {}}]}";
    assertEquals("transforms.x.type: class no.such.Smt not found (not a Kafka Connect class, "
        + "nor in a jar of plugin.path)", TransformChain.problems(spec(unknown)).get(0));
    String missing = "{'transforms': [{'name': 'r', 'class': '" + SMT + "RegexRouter',"
        + " 'settings': {'replacement': 'x'}}]}";
    String problem = TransformChain.problems(spec(missing)).get(0);
    assertTrue(problem.startsWith("transforms.r: ") && problem.contains("\"regex\""), problem);
    String unlisted = "{'transforms': [{'name': 'f', 'class': '" + SMT + "Filter',"
        + " 'settings': {}, 'predicate': 'p'}]}";
    assertEquals("transforms.f.predicate: no predicate named p in predicates",
        TransformChain.problems(spec(unlisted)).get(0));
  }

  @Test
  void routedRecordsAreWrittenButLeftOutOfTheOffsetMapping() throws Exception {
    Copies copies = new Copies(WriteSpec.parse("{\"flow\": \"a->b\", \"remote_topics\": {}}"));
    MockProducer<byte[], byte[]> producer =
        new MockProducer<>(true, new ByteArraySerializer(), new ByteArraySerializer());
    // Records with a "vip" header go to another topic; a filter drops those with "junk".
    String chain = "{'transforms': ["
        + "{'name': 'route', 'class': '" + SMT + "RegexRouter', 'predicate': 'vip',"
        + " 'settings': {'regex': '.*', 'replacement': 'vip'}},"
        + "{'name': 'drop', 'class': '" + SMT + "Filter', 'predicate': 'junk', 'settings': {}}],"
        + " 'predicates': ["
        + "{'name': 'vip', 'class': '" + SMT + "predicates.HasHeaderKey', 'settings': {'name': 'vip'}},"
        + "{'name': 'junk', 'class': '" + SMT + "predicates.HasHeaderKey', 'settings': {'name': 'junk'}}"
        + "]}";
    PartitionLog log = new PartitionLog("orders", 2, 10);
    Deliveries deliveries = new Deliveries();
    ConcurrentLinkedQueue<Copies.Failure> failures = new ConcurrentLinkedQueue<>();
    List<String> written = new ArrayList<>();
    try (TransformChain c = TransformChain.start(spec(chain))) {
      for (long offset = 10; offset < 17; offset++) {
        String mark = offset == 12 ? "vip" : offset == 14 || offset == 15 ? "junk" : "plain";
        Header[] hs = {new RecordHeader(mark, bytes("1"))};
        io.mirrorline.writer.SourceRecord r = record(offset, hs);
        ProducerRecord<byte[], byte[]> copy = copies.transformed(c, r, "a.orders");
        if (copy == null) {
          log.dropped++;
          continue;
        }
        written.add(offset + ">" + copy.topic());
        copies.send(producer, deliveries, log, r, copy, "a.orders", failures::add);
      }
    }
    deliveries.awaitAll();
    assertEquals(List.of("10>a.orders", "11>a.orders", "12>vip", "13>a.orders", "16>a.orders"),
        written);
    Map<String, Object> summary = log.summary(0);
    assertEquals(4L, summary.get("records"));
    assertEquals(1L, summary.get("routed"));
    assertEquals(2L, summary.get("dropped"));
    @SuppressWarnings("unchecked")
    List<long[]> runs = (List<long[]>) summary.get("runs");
    // 12 (routed) and 14-15 (dropped) read like source gaps: the next copy follows.
    assertEquals(3, runs.size());
    assertArrayEquals(new long[] {10, 0, 2}, runs.get(0));
    assertArrayEquals(new long[] {13, 2, 1}, runs.get(1));
    assertArrayEquals(new long[] {16, 3, 1}, runs.get(2));
    assertTrue(failures.isEmpty());
  }
}
