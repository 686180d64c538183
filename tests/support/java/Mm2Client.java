// Answers questions about one Kafka cluster with MirrorMaker 2's own client code,
// so that tests can compare Mirrorline's answers with MM2's on the same cluster.
//
//   java -cp <mirrormaker jars> Mm2Client.java <command> <bootstrap servers> [args] [--key=value ...]
//
// Commands (results on stdout, one per line, fields tab separated):
//   translate-offsets <source alias> <group>  RemoteClusterUtils.translateOffsets:
//                                             "<topic> <partition> <offset> <metadata>"
//   upstream-clusters                         RemoteClusterUtils.upstreamClusters
//   replication-hops <source alias>           RemoteClusterUtils.replicationHops
//   heartbeat-topics                          RemoteClusterUtils.heartbeatTopics
//   checkpoint-topics                         RemoteClusterUtils.checkpointTopics
//   remote-topics [source alias]              MirrorClient.remoteTopics
//   remote-names <source alias> <topic>...    the remote name of each topic under the
//                                             replication policy MM2 builds from the
//                                             properties (MirrorClient's); asks no cluster
//   format <topic> <offset-sync|checkpoint|heartbeat>
//       runs MM2's formatter over every record of every partition of <topic>, from
//       the beginning to the end offsets seen at start; exits with status 1 if any
//       record cannot be formatted (each failure is named on stderr).
//
// Arguments of the form --key=value are added to the client properties (for example
// --replication.policy.class=org.apache.kafka.connect.mirror.IdentityReplicationPolicy).
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.MessageFormatter;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.connect.mirror.MirrorClient;
import org.apache.kafka.connect.mirror.ReplicationPolicy;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;
import org.apache.kafka.connect.mirror.formatters.CheckpointFormatter;
import org.apache.kafka.connect.mirror.formatters.HeartbeatFormatter;
import org.apache.kafka.connect.mirror.formatters.OffsetSyncFormatter;

public class Mm2Client {
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Mm2Client <command> <bootstrap servers> [args] [--key=value ...]");
            System.exit(2);
        }
        List<String> positional = new ArrayList<>();
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[1]);
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (args[i].startsWith("--") && eq > 2) {
                props.put(args[i].substring(2, eq), args[i].substring(eq + 1));
            } else {
                positional.add(args[i]);
            }
        }
        int status;
        try {
            status = run(args[0], props, positional);
        } catch (Exception e) {
            // Printed here: the source launcher cannot print exceptions without a stack trace.
            System.err.println(args[0] + " failed: " + e);
            status = 1;
        }
        System.exit(status);
    }

    static int run(String command, Map<String, Object> props, List<String> a) throws Exception {
        switch (command) {
            case "remote-names": {
                try (MirrorClient client = new MirrorClient(props)) {
                    ReplicationPolicy policy = client.replicationPolicy();
                    for (String topic : a.subList(1, a.size())) {
                        System.out.println(policy.formatRemoteTopic(a.get(0), topic));
                    }
                }
                return 0;
            }
            case "translate-offsets": {
                Map<TopicPartition, OffsetAndMetadata> offsets =
                    RemoteClusterUtils.translateOffsets(props, a.get(0), a.get(1), TIMEOUT);
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                    System.out.println(String.join("\t", e.getKey().topic(),
                        "" + e.getKey().partition(), "" + e.getValue().offset(),
                        e.getValue().metadata()));
                }
                return 0;
            }
            case "upstream-clusters":
                return lines(RemoteClusterUtils.upstreamClusters(props));
            case "replication-hops":
                System.out.println(RemoteClusterUtils.replicationHops(props, a.get(0)));
                return 0;
            case "heartbeat-topics":
                return lines(RemoteClusterUtils.heartbeatTopics(props));
            case "checkpoint-topics":
                return lines(RemoteClusterUtils.checkpointTopics(props));
            case "remote-topics":
                try (MirrorClient client = new MirrorClient(props)) {
                    return lines(a.isEmpty() ? client.remoteTopics() : client.remoteTopics(a.get(0)));
                }
            case "format":
                return format(props, a.get(0), formatter(a.get(1)));
            default:
                System.err.println("unknown command " + command);
                return 2;
        }
    }

    static int lines(Set<String> values) {
        for (String value : new TreeSet<>(values)) System.out.println(value);
        return 0;
    }

    static MessageFormatter formatter(String kind) {
        switch (kind) {
            case "offset-sync": return new OffsetSyncFormatter();
            case "checkpoint": return new CheckpointFormatter();
            case "heartbeat": return new HeartbeatFormatter();
            default: throw new IllegalArgumentException("unknown record kind " + kind);
        }
    }

    /** Formats every record up to the end offsets seen at start; 1 if any record fails. */
    static int format(Map<String, Object> props, String topic, MessageFormatter formatter) {
        int failures = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic, TIMEOUT)) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            if (partitions.isEmpty()) {
                System.err.println("topic " + topic + " does not exist");
                return 1;
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, TIMEOUT);
            long deadline = System.currentTimeMillis() + TIMEOUT.toMillis();
            PrintStream out = System.out;
            while (!atEnd(consumer, end)) {
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("reading " + topic + " timed out");
                    return 1;
                }
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    try {
                        formatter.writeTo(record, out);
                    } catch (RuntimeException e) {
                        failures++;
                        System.err.println(topic + "-" + record.partition() + " offset "
                            + record.offset() + " cannot be formatted: " + e);
                    }
                }
            }
        }
        return failures == 0 ? 0 : 1;
    }

    static boolean atEnd(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (consumer.position(e.getKey()) < e.getValue()) return false;
        }
        return true;
    }
}
