// Kafka Streams on benches/bench_sliding.py's records, for benches/bench_kafka_streams.py: the
// same sliding windows as windowstore's streaming processor (time difference D, grace, count,
// sum and max of the value, each window once when it closes), computed by a Kafka Streams
// application (one stream thread, Kafka's default RocksDB store and record cache) reading a
// topic of a real broker.
//
// Run in Java's source-file mode on Kafka Streams' classpath (tests/spark/kafka/streams):
//     java -cp CLASSPATH benches/KafkaStreamsBench.java BOOTSTRAP TOPIC RECORDS_FILE D GRACE STATE
// RECORDS_FILE holds the records as little-endian int64 triples (key, time in ms, value), in
// arrival order. The program creates TOPIC (one partition, kept forever), writes the records
// to it with their times as record timestamps, then sentinel records (key -1) that take stream
// time far enough to close every window, and prints one JSON line. Then each line
// "run EMIT_INTERVAL_MS" on standard input starts a fresh application (its own application id
// and state directory) that reads the topic from the start, and prints one JSON line: the
// seconds from the first record it processed to the last (startup and the final emission
// excluded), and the windows it emitted (the sentinels' excluded), summed column by column so
// that the caller can check them against its own. Standard input at its end stops the program.
// EMIT_INTERVAL_MS sets how often (wall-clock ms) the run's Kafka looks for closed windows (an
// internal setting, once a second by default; -1 keeps Kafka's default): the runs of one
// program may differ in it. STATE is the window store: "rocksdb" (Kafka's default: RocksDB, with a
// changelog topic on the broker that backs it up), "rocksdb-nolog" (no changelog) or
// "memory-nolog" (Kafka's in-memory store, no changelog).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.state.BuiltInDslStoreSuppliers;
import org.apache.kafka.streams.state.WindowStore;

public final class KafkaStreamsBench {
    /** The sentinel's key: no record of the data has a negative key. */
    private static final long SENTINEL = -1L;
    /** Kafka checks for closed windows at most once a second of wall-clock time (its default
     * emit interval): the run waits this long before the records that make it emit the last. */
    private static final long EMIT_WAIT_MS = 1_100L;

    private KafkaStreamsBench() {
    }

    /** A window's aggregates: count, sum and max of the value, as 24 bytes. */
    private static final Serde<long[]> AGGREGATES = Serdes.serdeFrom(
        (Serializer<long[]>) (topic, a) ->
            ByteBuffer.allocate(24).putLong(a[0]).putLong(a[1]).putLong(a[2]).array(),
        (Deserializer<long[]>) (topic, bytes) -> {
            final ByteBuffer b = ByteBuffer.wrap(bytes);
            return new long[] {b.getLong(), b.getLong(), b.getLong()};
        });

    public static void main(final String[] args) throws Exception {
        if (args.length != 6 || !List.of("rocksdb", "rocksdb-nolog", "memory-nolog").contains(args[5])) {
            throw new IllegalArgumentException("usage: KafkaStreamsBench BOOTSTRAP TOPIC RECORDS_FILE"
                + " D GRACE rocksdb|rocksdb-nolog|memory-nolog");
        }
        final String bootstrap = args[0];
        final String topic = args[1];
        final Path file = Path.of(args[2]);
        final long d = Long.parseLong(args[3]);
        final long grace = Long.parseLong(args[4]);
        final String state = args[5];

        final long started = System.nanoTime();
        final long records;
        final Sentinels sentinels;
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
             KafkaProducer<Long, Long> producer = producer(bootstrap)) {
            createTopic(admin, topic);
            long latest = Long.MIN_VALUE;
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
                final LongBuffer data = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size())
                    .order(ByteOrder.LITTLE_ENDIAN).asLongBuffer();
                records = data.limit() / 3;
                for (long i = 0; i < records; i++) {
                    final int at = (int) (3 * i);
                    final long t = data.get(at + 1);
                    latest = Math.max(latest, t);
                    producer.send(new ProducerRecord<>(topic, null, t, data.get(at), data.get(at + 2)));
                }
            }
            // Stream time past every window's end (at most latest + D) plus the grace closes
            // every window. Kafka drops expired windows before it emits closed ones, so a
            // single jump there would lose windows that close in it (docs/semantics.md section
            // 7): the sentinels step there, D / 4 at a time.
            final long last = latest + d + grace + 1;
            final long step = Math.max(1, d / 4);
            long t = latest;
            int written = 0;
            do {
                t = Math.min(t + step, last);
                producer.send(new ProducerRecord<>(topic, null, t, SENTINEL, 0L));
                written++;
            } while (t < last);
            producer.flush();
            sentinels = new Sentinels(bootstrap, topic, last, written);
        }
        System.out.printf("{\"produced\": %d, \"seconds\": %.3f}%n",
            records, (System.nanoTime() - started) / 1e9);
        System.out.flush();

        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int run = 0;
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            final String[] words = line.strip().split(" ");
            if (words.length != 2 || !words[0].equals("run")) {
                throw new IllegalArgumentException("expected 'run EMIT_INTERVAL_MS', got " + line);
            }
            final long emitInterval = Long.parseLong(words[1]);
            System.out.println(runOnce(bootstrap, topic, d, grace, emitInterval, state, records, sentinels, run++));
            System.out.flush();
        }
    }

    /** Creates `topic`, one partition, kept forever (its times are of 1970), retrying for two
     * minutes while the broker, just started, has not yet joined its controller. */
    private static void createTopic(final Admin admin, final String topic) throws Exception {
        final long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (true) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1)
                    .configs(Map.of("retention.ms", "-1", "retention.bytes", "-1"))))
                    .all().get(30, TimeUnit.SECONDS);
                return;
            } catch (final ExecutionException | java.util.concurrent.TimeoutException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(1_000);
            }
        }
    }

    private static KafkaProducer<Long, Long> producer(final String bootstrap) {
        final Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "1");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, 1 << 20);
        p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, 256L << 20);
        return new KafkaProducer<>(p, new LongSerializer(), new LongSerializer());
    }

    /** The sentinel records in the topic: those after the data, and two more per run. */
    private static final class Sentinels {
        private final String bootstrap;
        private final String topic;
        private final long time;
        private long written;

        Sentinels(final String bootstrap, final String topic, final long time, final long written) {
            this.bootstrap = bootstrap;
            this.topic = topic;
            this.time = time;
            this.written = written;
        }

        /** Writes two more sentinels: the first makes a run emit its last closed windows (the
         * emit interval has passed), the second follows it, so that a run that has processed
         * the second has forwarded everything the first emitted. */
        void writeTwo() {
            try (KafkaProducer<Long, Long> producer = producer(bootstrap)) {
                producer.send(new ProducerRecord<>(topic, null, time, SENTINEL, 0L));
                producer.send(new ProducerRecord<>(topic, null, time, SENTINEL, 0L));
                producer.flush();
            }
            written += 2;
        }
    }

    private static String runOnce(
            final String bootstrap, final String topic, final long d, final long grace,
            final long emitInterval, final String state, final long records,
            final Sentinels sentinels, final int run) throws Exception {
        final AtomicLong seen = new AtomicLong();
        final AtomicLong seenSentinels = new AtomicLong();
        // Every record processed, sentinels too: a run whose count stops moving has stalled.
        final LongSupplier processed = () -> seen.get() + seenSentinels.get();
        final long[] firstAndLast = new long[2];
        // Written by the stream thread only; read after it has processed the last sentinel.
        final long[] sums = new long[6];

        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream(topic, Consumed.with(Serdes.Long(), Serdes.Long()))
            .peek((k, v) -> {
                if (k == SENTINEL) {
                    seenSentinels.incrementAndGet();
                    return;
                }
                final long n = seen.incrementAndGet();
                if (n == 1) {
                    firstAndLast[0] = System.nanoTime();
                }
                if (n == records) {
                    firstAndLast[1] = System.nanoTime();
                }
            })
            .groupByKey(Grouped.with(Serdes.Long(), Serdes.Long()))
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(d), Duration.ofMillis(grace)))
            .emitStrategy(EmitStrategy.onWindowClose())
            .aggregate(
                () -> new long[] {0L, 0L, Long.MIN_VALUE},
                (k, v, a) -> new long[] {a[0] + 1, a[1] + v, Math.max(a[2], v)},
                state.endsWith("-nolog")
                    ? Materialized.<Long, long[], WindowStore<Bytes, byte[]>>with(Serdes.Long(), AGGREGATES)
                        .withLoggingDisabled()
                    : Materialized.with(Serdes.Long(), AGGREGATES))
            .toStream()
            .foreach((w, a) -> {
                if (w.key() == SENTINEL) {
                    return;
                }
                sums[0] += 1;
                sums[1] += a[0];
                sums[2] += a[1];
                sums[3] += a[2];
                sums[4] += w.window().start();
                sums[5] += w.window().end();
            });

        final Path stateDir = Files.createTempDirectory("kafka-streams-bench");
        final Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "windowstore-bench-" + run + "-" + System.nanoTime());
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        if (state.startsWith("memory")) {
            p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG,
                BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers.class);
        }
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        if (emitInterval >= 0) {
            // How often (wall-clock ms) Kafka looks for closed windows; internal, default 1000.
            p.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION, emitInterval);
        }
        final KafkaStreams streams = new KafkaStreams(builder.build(), p);
        try {
            streams.start();
            final long before = sentinels.written;
            waitFor(() -> seen.get() == records && seenSentinels.get() == before, streams, processed);
            Thread.sleep(EMIT_WAIT_MS);
            sentinels.writeTwo();
            waitFor(() -> seenSentinels.get() == sentinels.written, streams, processed);
        } finally {
            streams.close(Duration.ofSeconds(60));
            streams.cleanUp();
            try (Stream<Path> paths = Files.walk(stateDir)) {
                paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
            }
        }
        return String.format(
            "{\"seconds\": %.3f, \"records\": %d, \"windows\": %d, \"sum_count\": %d, "
                + "\"sum_sum\": %d, \"sum_max\": %d, \"sum_start\": %d, \"sum_end\": %d}",
            (firstAndLast[1] - firstAndLast[0]) / 1e9, seen.get(),
            sums[0], sums[1], sums[2], sums[3], sums[4], sums[5]);
    }

    private interface Condition {
        boolean holds();
    }

    /** A run that processes no record for this long has stalled. */
    private static final long STALL_NS = TimeUnit.MINUTES.toNanos(2);

    /** Waits until `done` holds, failing if the application stops, or processes nothing
     * (`progress` stays the same) for two minutes on the way. */
    private static void waitFor(final Condition done, final KafkaStreams streams,
            final LongSupplier progress) throws InterruptedException {
        long last = progress.getAsLong();
        long since = System.nanoTime();
        while (!done.holds()) {
            final KafkaStreams.State s = streams.state();
            if (s == KafkaStreams.State.ERROR || s == KafkaStreams.State.NOT_RUNNING
                    || s == KafkaStreams.State.PENDING_ERROR) {
                throw new IllegalStateException("the Kafka Streams application stopped: " + s);
            }
            final long now = progress.getAsLong();
            if (now != last) {
                last = now;
                since = System.nanoTime();
            } else if (System.nanoTime() - since > STALL_NS) {
                throw new IllegalStateException("the Kafka Streams application processed no "
                    + "record for two minutes, after " + now);
            }
            Thread.sleep(5);
        }
    }
}
