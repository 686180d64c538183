// The replication benchmark's ceiling: the least a replicator must do, in one process.
//
// One consumer reads every partition of a source topic from the beginning and one
// producer writes each record to the same partition of the remote topic on the
// target, with the same key, value, headers and original timestamp. Nothing else:
// no offset translation, no progress, no checkpoints, no heartbeats. It runs until
// SIGTERM, then flushes and exits; a failed send ends it with code 1.
//
// Java 17 runs this file as it is, against the Kafka client jars:
//
//   java -cp <kafka-clients and its libraries> benchmarks/CopyLoop.java SETTINGS_FILE
//
// SETTINGS_FILE is a properties file:
//
//   source.bootstrap.servers, target.bootstrap.servers   the two clusters
//   topic, remote.topic                                   what to copy, and where to
//   replication.factor                                    of the remote topic if created
//   consumer.<setting>, producer.<setting>                client settings, as written
//
// The remote topic is created with the source topic's partition count when it does
// not exist yet, as the replicators do.

import java.io.FileReader;
import java.io.IOException;
import java.io.Reader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class CopyLoop {

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: java -cp <kafka client jars> CopyLoop.java SETTINGS_FILE");
            System.exit(2);
        }
        Properties settings = load(args[0]);
        String topic = required(settings, "topic", args[0]);
        String remoteTopic = required(settings, "remote.topic", args[0]);
        String source = required(settings, "source.bootstrap.servers", args[0]);
        String target = required(settings, "target.bootstrap.servers", args[0]);
        short replicationFactor = Short.parseShort(settings.getProperty("replication.factor", "1"));

        int partitions = partitionCount(source, topic);
        createTopic(target, remoteTopic, partitions, replicationFactor);

        Properties consumerSettings = withPrefix(settings, "consumer.");
        consumerSettings.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, source);
        consumerSettings.put(ConsumerConfig.CLIENT_ID_CONFIG, "copy-loop-consumer");
        consumerSettings.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        consumerSettings.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        consumerSettings.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        Properties producerSettings = withPrefix(settings, "producer.");
        producerSettings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, target);
        producerSettings.put(ProducerConfig.CLIENT_ID_CONFIG, "copy-loop-producer");
        producerSettings.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        producerSettings.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);

        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerSettings);
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerSettings);
        AtomicReference<Exception> failure = new AtomicReference<>();
        Callback onSent = (metadata, error) -> {
            if (error != null) {
                failure.compareAndSet(null, error);
            }
        };
        List<TopicPartition> assigned = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            assigned.add(new TopicPartition(topic, p));
        }
        consumer.assign(assigned);
        consumer.seekToBeginning(assigned);

        // SIGTERM: stop polling, then send what was read and close both clients.
        Thread loop = Thread.currentThread();
        Thread stopper = new Thread(() -> {
            consumer.wakeup();
            try {
                loop.join(60_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Runtime.getRuntime().addShutdownHook(stopper);

        long copied = 0;
        try {
            while (failure.get() == null) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    producer.send(
                            new ProducerRecord<>(
                                    remoteTopic,
                                    record.partition(),
                                    record.timestamp(),
                                    record.key(),
                                    record.value(),
                                    record.headers()),
                            onSent);
                }
                copied += records.count();
            }
        } catch (WakeupException stopping) {
            // SIGTERM: fall through to the flush.
        } finally {
            producer.flush();
            producer.close();
            consumer.close();
        }
        if (failure.get() != null) {
            System.err.println("copy loop: a send failed after " + copied + " records: " + failure.get());
            Runtime.getRuntime().halt(1);
        }
        System.out.println("copy loop: stopped after " + copied + " records");
    }

    private static Properties load(String path) throws IOException {
        Properties properties = new Properties();
        try (Reader reader = new FileReader(path)) {
            properties.load(reader);
        }
        return properties;
    }

    private static String required(Properties settings, String key, String path) {
        String value = settings.getProperty(key);
        if (value == null || value.isBlank()) {
            System.err.println("copy loop: " + path + " lacks " + key);
            System.exit(2);
        }
        return value.trim();
    }

    private static Properties withPrefix(Properties settings, String prefix) {
        Properties out = new Properties();
        for (String key : settings.stringPropertyNames()) {
            if (key.startsWith(prefix)) {
                out.put(key.substring(prefix.length()), settings.getProperty(key).trim());
            }
        }
        return out;
    }

    private static Properties adminSettings(String bootstrap) {
        Properties settings = new Properties();
        settings.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        settings.put(AdminClientConfig.CLIENT_ID_CONFIG, "copy-loop-admin");
        return settings;
    }

    private static int partitionCount(String bootstrap, String topic) throws Exception {
        try (Admin admin = Admin.create(adminSettings(bootstrap))) {
            return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
        }
    }

    private static void createTopic(String bootstrap, String topic, int partitions, short replication)
            throws Exception {
        try (Admin admin = Admin.create(adminSettings(bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, replication))).all().get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
    }
}
