// Decodes and encodes MirrorMaker 2 records with MM2's own classes, for
// compatibility tests. Reads lines from stdin, one command per line:
//   decode <offset-sync|checkpoint|heartbeat> <key hex> <value hex>
//       -> prints the decoded fields, tab separated
//   encode-offset-sync <topic> <partition> <upstream> <downstream>
//   encode-checkpoint <group> <topic> <partition> <upstream> <downstream> <metadata>
//   encode-heartbeat <source> <target> <timestamp>
//       -> prints "<key hex> <value hex>", serialised with MM2's public schemas
import java.nio.ByteBuffer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HexFormat;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.Struct;
import org.apache.kafka.connect.mirror.Checkpoint;
import org.apache.kafka.connect.mirror.Heartbeat;
import org.apache.kafka.connect.mirror.OffsetSync;

public class Mm2Formats {
    static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            String[] a = line.split("\t", -1);
            System.out.println(handle(a));
        }
    }

    static String handle(String[] a) {
        switch (a[0]) {
            case "decode": {
                ConsumerRecord<byte[], byte[]> r =
                    new ConsumerRecord<>("t", 0, 0L, HEX.parseHex(a[2]), HEX.parseHex(a[3]));
                switch (a[1]) {
                    case "offset-sync": {
                        OffsetSync s = OffsetSync.deserializeRecord(r);
                        return String.join("\t", s.topicPartition().topic(),
                            "" + s.topicPartition().partition(), "" + s.upstreamOffset(),
                            "" + s.downstreamOffset());
                    }
                    case "checkpoint": {
                        Checkpoint c = Checkpoint.deserializeRecord(r);
                        return String.join("\t", c.consumerGroupId(), c.topicPartition().topic(),
                            "" + c.topicPartition().partition(), "" + c.upstreamOffset(),
                            "" + c.downstreamOffset(), c.metadata());
                    }
                    case "heartbeat": {
                        Heartbeat h = Heartbeat.deserializeRecord(r);
                        return String.join("\t", h.sourceClusterAlias(), h.targetClusterAlias(),
                            "" + h.timestamp());
                    }
                    default: throw new IllegalArgumentException(a[1]);
                }
            }
            case "encode-offset-sync": {
                Struct k = new Struct(OffsetSync.KEY_SCHEMA)
                    .set("topic", a[1]).set("partition", Integer.parseInt(a[2]));
                Struct v = new Struct(OffsetSync.VALUE_SCHEMA)
                    .set("upstreamOffset", Long.parseLong(a[3])).set("offset", Long.parseLong(a[4]));
                return hex(OffsetSync.KEY_SCHEMA, k) + " " + hex(OffsetSync.VALUE_SCHEMA, v);
            }
            case "encode-checkpoint": {
                Struct k = new Struct(Checkpoint.KEY_SCHEMA).set("group", a[1])
                    .set("topic", a[2]).set("partition", Integer.parseInt(a[3]));
                Struct h = new Struct(Checkpoint.HEADER_SCHEMA).set("version", Checkpoint.VERSION);
                Struct v = new Struct(Checkpoint.VALUE_SCHEMA_V0)
                    .set("upstreamOffset", Long.parseLong(a[4])).set("offset", Long.parseLong(a[5]))
                    .set("metadata", a[6]);
                return hex(Checkpoint.KEY_SCHEMA, k) + " "
                    + hex(Checkpoint.HEADER_SCHEMA, h) + hex(Checkpoint.VALUE_SCHEMA_V0, v);
            }
            case "encode-heartbeat": {
                Struct k = new Struct(Heartbeat.KEY_SCHEMA)
                    .set("sourceClusterAlias", a[1]).set("targetClusterAlias", a[2]);
                Struct h = new Struct(Heartbeat.HEADER_SCHEMA).set("version", Heartbeat.VERSION);
                Struct v = new Struct(Heartbeat.VALUE_SCHEMA_V0).set("timestamp", Long.parseLong(a[3]));
                return hex(Heartbeat.KEY_SCHEMA, k) + " "
                    + hex(Heartbeat.HEADER_SCHEMA, h) + hex(Heartbeat.VALUE_SCHEMA_V0, v);
            }
            default: throw new IllegalArgumentException(a[0]);
        }
    }

    static String hex(Schema schema, Struct struct) {
        ByteBuffer buffer = ByteBuffer.allocate(schema.sizeOf(struct));
        schema.write(buffer, struct);
        return HEX.formatHex(buffer.array());
    }
}
