package windowstore.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import org.apache.kafka.common.Metric;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindowedDeserializer;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TimeWindowedDeserializer;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Kafka Streams conformance oracle.
 *
 * <p>Usage: {@code java -jar kafka-oracle.jar IN.json OUT.json}, or without arguments as a
 * server (see {@link #serve()}). IN is a JSON array of cases,
 * OUT receives a JSON array with, per case, {@code {"records": [...], "dropped": [...]}}:
 * the records Kafka forwarded to the output topic, in forwarding order, and per input record
 * how much Kafka's dropped-records metric grew while processing it ({@link DroppedRecords}).
 * See {@link CaseSpec} for the input format; each output record is
 * {@code {"key": str, "start": long, "end": long, "value": long|str|null, "timestamp": long,
 * "input": int}}, where {@code input} is the index of the input record that caused it.
 *
 * <p>Every case gets a fresh {@link TopologyTestDriver} (closed afterwards) so cases never share
 * state, but all cases run in one JVM because JVM start-up dominates the cost of a case.
 *
 * <p>Any malformed case or unexpected Kafka behaviour makes the whole run fail with a non-zero
 * exit status and a message on stderr; nothing is written to OUT in that case.
 */
public final class Driver {

    private static final String INPUT_TOPIC = "input";
    private static final String OUTPUT_TOPIC = "output";
    /** Application ids (and state directories) are unique per JVM, across requests. */
    private static final AtomicInteger CASES = new AtomicInteger();
    private static final ObjectMapper MAPPER =
        new ObjectMapper().disable(SerializationFeature.INDENT_OUTPUT);

    private Driver() {
    }

    public static void main(final String[] args) {
        if (args.length == 0) {
            serve();
            return;
        }
        if (args.length != 2) {
            System.err.println("usage: java -jar kafka-oracle.jar [IN.json OUT.json]");
            System.exit(2);
        }
        Path stateDir = null;
        int exit = 0;
        try {
            final JsonNode root = MAPPER.readTree(Paths.get(args[0]).toFile());
            stateDir = Files.createTempDirectory("kafka-oracle-state");
            MAPPER.writeValue(Paths.get(args[1]).toFile(), runAll(root, stateDir));
        } catch (final Exception e) {
            System.err.println("kafka-oracle: " + e.getMessage());
            e.printStackTrace(System.err);
            exit = 1;
        } finally {
            finish(stateDir);
        }
        // Exit explicitly: Kafka may leave non-daemon threads behind.
        System.exit(exit);
    }

    /**
     * Server mode (no arguments): one JSON array of cases per line on stdin, one line per
     * request on stdout, {@code {"ok": [...]}} or {@code {"error": "..."}}; ends at end of
     * input. Saves the JVM start (about a second) on every request after the first.
     */
    private static void serve() {
        Path stateDir = null;
        int exit = 0;
        try (BufferedReader in = new BufferedReader(
                new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            stateDir = Files.createTempDirectory("kafka-oracle-state");
            final PrintStream out = new PrintStream(
                new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
            System.setOut(System.err);  // nothing but replies on stdout
            String line;
            while ((line = in.readLine()) != null) {
                Map<String, Object> reply;
                try {
                    reply = Map.of("ok", runAll(MAPPER.readTree(line), stateDir));
                } catch (final Exception e) {
                    reply = Map.of("error", causes(e));
                }
                out.println(MAPPER.writeValueAsString(reply));
                out.flush();
            }
        } catch (final IOException e) {
            System.err.println("kafka-oracle: " + e.getMessage());
            exit = 1;
        } finally {
            finish(stateDir);
        }
        System.exit(exit);
    }

    /** The message of an exception and of each of its causes, one a line. */
    private static String causes(final Throwable e) {
        final StringBuilder text = new StringBuilder(String.valueOf(e.getMessage()));
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            text.append("\ncaused by: ").append(c);
        }
        return text.toString();
    }

    private static List<Map<String, Object>> runAll(final JsonNode root, final Path stateDir) {
        if (root == null || !root.isArray()) {
            throw new IllegalArgumentException("input must be a JSON array of cases");
        }
        final List<Map<String, Object>> results = new ArrayList<>();
        for (int i = 0; i < root.size(); i++) {
            final CaseSpec spec;
            try {
                spec = CaseSpec.parse(root.get(i));
            } catch (final RuntimeException e) {
                throw new IllegalArgumentException("case " + i + ": " + e.getMessage(), e);
            }
            try {
                results.add(runCase(spec, stateDir, CASES.getAndIncrement()));
            } catch (final RuntimeException e) {
                throw new IllegalStateException("case " + i + " failed: " + e, e);
            }
        }
        return results;
    }

    /** Removes the state directory. */
    private static void finish(final Path stateDir) {
        if (stateDir != null) {
            deleteRecursively(stateDir);
        }
    }

    private static <V, S extends StateStore> Materialized<String, V, S> store(
            final CaseSpec spec, final Serde<V> valueSerde) {
        Materialized<String, V, S> m = Materialized.<String, V, S>with(Serdes.String(), valueSerde)
            .withLoggingDisabled();
        m = spec.emit.equals("cached") ? m.withCachingEnabled() : m.withCachingDisabled();
        if (spec.retention != null) {
            m = m.withRetention(Duration.ofMillis(spec.retention));
        }
        return m;
    }

    /** A window as seen inside the topology, before serialization, and the input it came of. */
    private record SeenWindow(String key, long start, long end, int input) {
    }

    private static Map<String, Object> runCase(
            final CaseSpec spec, final Path stateDir, final int index) {
        final Aggs.Agg<?> agg = Aggs.BY_NAME.get(spec.agg);
        if (agg == null) {
            throw new IllegalArgumentException("unknown agg " + spec.agg);
        }
        return runTyped(spec, agg, stateDir, index);
    }

    /**
     * The case's output: {@code "records"}, everything forwarded (see the class comment), and
     * {@code "dropped"}, per input record the growth of Kafka's dropped-records metric while
     * it was processed (see {@link DroppedRecords}).
     */
    private static <V> Map<String, Object> runTyped(
            final CaseSpec spec, final Aggs.Agg<V> agg, final Path stateDir, final int index) {
        final boolean session = spec.window.equals("session");
        // onWindowUpdate is Kafka's default: every emit mode but "final" forwards each update.
        final EmitStrategy emitStrategy = spec.emit.equals("final")
            ? EmitStrategy.onWindowClose() : EmitStrategy.onWindowUpdate();
        final boolean cached = spec.emit.equals("cached");

        final StreamsBuilder builder = new StreamsBuilder();
        KStream<String, Long> stream =
            builder.stream(INPUT_TOPIC, Consumed.with(Serdes.String(), Serdes.Long()));
        final boolean[] gateOpen = {true};
        if (cached) {
            stream = stream.processValues(() -> new BatchGate(gateOpen));
        }
        final KGroupedStream<String, Long> grouped =
            stream.groupByKey(Grouped.with(Serdes.String(), Serdes.Long()));

        KTable<Windowed<String>, V> table;
        final Serde<Windowed<String>> windowedSerde;
        if (session) {
            final SessionWindows windows = SessionWindows.ofInactivityGapAndGrace(
                Duration.ofMillis(spec.gap), Duration.ofMillis(spec.grace));
            table = agg.session(
                grouped.windowedBy(windows).emitStrategy(emitStrategy), store(spec, agg.serde()));
            windowedSerde = WindowedSerdes.sessionWindowedSerdeFrom(String.class);
        } else {
            final SlidingWindows windows = SlidingWindows.ofTimeDifferenceAndGrace(
                Duration.ofMillis(spec.timeDifference), Duration.ofMillis(spec.grace));
            table = agg.sliding(
                grouped.windowedBy(windows).emitStrategy(emitStrategy), store(spec, agg.serde()));
            // A time-windowed key is serialized as (key, start) only; the deserializer rebuilds
            // end = start + windowSize. For sliding windows Kafka's TimeWindow is built as
            // [start, start + timeDifference] (both ends inclusive in sliding semantics), so
            // windowSize = timeDifference. The ends seen inside the topology are cross-checked
            // against the deserialized ones below.
            windowedSerde = WindowedSerdes.timeWindowedSerdeFrom(String.class, spec.timeDifference);
        }
        if (spec.emit.equals("suppress")) {
            // Emits a window once stream time (of the records reaching the suppression) is at
            // least its end plus the suppression's grace: the window's grace (sessions: gap +
            // grace, the time a session end stays mergeable), as untilWindowCloses takes it.
            table = table.suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()));
        }

        // Processing is synchronous in TopologyTestDriver: everything forwarded while the input
        // record `current[0]` is piped in is caused by that record.
        final int[] current = {0};
        final List<SeenWindow> seen = new ArrayList<>();
        table.toStream()
            .peek((k, v) -> seen.add(
                new SeenWindow(k.key(), k.window().start(), k.window().end(), current[0])))
            .to(OUTPUT_TOPIC, Produced.with(windowedSerde, agg.serde()));
        final Topology topology = builder.build();

        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "windowstore-oracle-" + index);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "oracle.invalid:9092");
        // A state directory of its own per case.
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.resolve("case-" + index).toString());
        // Emit "update" = every update forwarded: record cache disabled (Kafka 4.x name).
        // Emit "cached": a cache far larger than any case, so that it never evicts (an eviction
        // would forward a window before the batch ends); it is flushed at each commit only.
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, cached ? 256L << 20 : 0L);
        // Emit "final" (onWindowClose) checks for closed windows at most once per this many
        // *wall-clock* ms (internal config, default 1000). TopologyTestDriver's wall clock
        // does not move by itself, so with the default only the first check would ever run.
        // 0 makes Kafka check for closed windows after every input record.
        props.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION, 0L);

        final List<Map<String, Object>> out = new ArrayList<>();
        final List<Long> dropped = new ArrayList<>();
        TopologyTestDriver driver = new TopologyTestDriver(topology, props);
        try {
            List<Metric> droppedMetrics = DroppedRecords.of(driver);
            TestInputTopic<String, Long> input = inputTopic(driver);
            TestOutputTopic<Windowed<String>, V> output = outputTopic(driver, spec, agg);
            for (int in = 0; in < spec.records.size(); in++) {
                if (spec.restartBefore.contains(in)) {
                    // A new driver, hence new processor instances: what a restart does to
                    // in-memory processor state such as observed stream time. The stores do
                    // not survive (TopologyTestDriver.close() cleans the state directory).
                    drain(output, seen, out);
                    driver.close();
                    driver = new TopologyTestDriver(topology, props);
                    input = inputTopic(driver);
                    output = outputTopic(driver, spec, agg);
                    droppedMetrics = DroppedRecords.of(driver);
                }
                final InputRecord r = spec.records.get(in);
                current[0] = in;
                gateOpen[0] = !cached || spec.batchEnds.contains(in);
                final long droppedBefore = DroppedRecords.total(droppedMetrics);
                input.pipeInput(r.key, r.value, r.timestamp);
                dropped.add(DroppedRecords.total(droppedMetrics) - droppedBefore);
            }
            drain(output, seen, out);
        } finally {
            // On this thread: closed from another one, a driver leaves RocksDB files open.
            driver.close();
        }
        final Map<String, Object> result = new LinkedHashMap<>();
        result.put("records", out);
        result.put("dropped", dropped);
        return result;
    }

    private static TestInputTopic<String, Long> inputTopic(final TopologyTestDriver driver) {
        return driver.createInputTopic(INPUT_TOPIC, new StringSerializer(), new LongSerializer());
    }

    private static <V> TestOutputTopic<Windowed<String>, V> outputTopic(
            final TopologyTestDriver driver, final CaseSpec spec, final Aggs.Agg<V> agg) {
        return driver.createOutputTopic(
            OUTPUT_TOPIC,
            spec.window.equals("session")
                ? new SessionWindowedDeserializer<>(new StringDeserializer())
                : new TimeWindowedDeserializer<>(new StringDeserializer(), spec.timeDifference),
            agg.serde().deserializer());
    }

    /** Reads everything forwarded since the last call; cross-checks it against {@code seen}. */
    private static <V> void drain(final TestOutputTopic<Windowed<String>, V> output,
                                  final List<SeenWindow> seen,
                                  final List<Map<String, Object>> out) {
        final List<TestRecord<Windowed<String>, V>> records = output.readRecordsToList();
        if (records.size() != seen.size()) {
            throw new IllegalStateException("forwarded " + seen.size()
                + " records but output topic holds " + records.size());
        }
        for (int i = 0; i < records.size(); i++) {
            final TestRecord<Windowed<String>, V> rec = records.get(i);
            final Windowed<String> wk = rec.key();
            final SeenWindow inTopology = seen.get(i);
            final SeenWindow deserialized = new SeenWindow(
                wk.key(), wk.window().start(), wk.window().end(), inTopology.input());
            if (!inTopology.equals(deserialized)) {
                throw new IllegalStateException("window mismatch: topology forwarded "
                    + inTopology + " but output topic decoded " + deserialized);
            }
            final Map<String, Object> o = new LinkedHashMap<>();
            o.put("key", wk.key());
            o.put("start", wk.window().start());
            // Session: window end = last event time (inclusive).
            // Sliding: Kafka reports Window.end() = start + timeDifference, which is the
            // inclusive end of a sliding window; written unchanged.
            o.put("end", wk.window().end());
            o.put("value", rec.value());
            o.put("timestamp", rec.timestamp());
            o.put("input", inTopology.input());
            out.add(o);
        }
        seen.clear();
    }

    private static void deleteRecursively(final Path dir) {
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (final IOException ignored) {
                    // best effort
                }
            });
        } catch (final IOException ignored) {
            // best effort
        }
    }

    /** One input record: key, event time (ms), value. */
    static final class InputRecord {
        final String key;
        final long timestamp;
        final long value;

        InputRecord(final String key, final long timestamp, final long value) {
            this.key = key;
            this.timestamp = timestamp;
            this.value = value;
        }
    }
}
