package windowstore.oracle;

import java.util.Map;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.kstream.Aggregator;
import org.apache.kafka.streams.kstream.Initializer;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Merger;
import org.apache.kafka.streams.kstream.SessionWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The aggregates a case can ask for, each an initializer, an adder and (for sessions) a
 * merger, as Kafka's {@code aggregate} takes them. Every window holds at least one record, so
 * the initial values of min and max never reach the output.
 */
final class Aggs {
    private Aggs() {
    }

    /** One aggregate: its value serde and the three functions of Kafka's aggregate. */
    record Agg<V>(Serde<V> serde, Initializer<V> init, Aggregator<String, Long, V> add,
                  Merger<String, V> merge) {

        KTable<Windowed<String>, V> session(
                final SessionWindowedKStream<String, Long> windowed,
                final Materialized<String, V, SessionStore<Bytes, byte[]>> m) {
            return windowed.aggregate(init, add, merge, m);
        }

        KTable<Windowed<String>, V> sliding(
                final TimeWindowedKStream<String, Long> windowed,
                final Materialized<String, V, WindowStore<Bytes, byte[]>> m) {
            return windowed.aggregate(init, add, m);
        }
    }

    static final Agg<Long> COUNT = new Agg<>(Serdes.Long(), () -> 0L,
        (key, value, agg) -> agg + 1, (key, left, right) -> left + right);

    static final Agg<Long> SUM = new Agg<>(Serdes.Long(), () -> 0L,
        (key, value, agg) -> agg + value, (key, left, right) -> left + right);

    static final Agg<Long> MIN = new Agg<>(Serdes.Long(), () -> Long.MAX_VALUE,
        (key, value, agg) -> Math.min(agg, value), (key, left, right) -> Math.min(left, right));

    static final Agg<Long> MAX = new Agg<>(Serdes.Long(), () -> Long.MIN_VALUE,
        (key, value, agg) -> Math.max(agg, value), (key, left, right) -> Math.max(left, right));

    /**
     * The mean as the exact fraction "sum/count" (the Python side compares it with
     * windowstore's float as a fraction, so no rounding of either side matters).
     */
    static final Agg<String> MEAN = new Agg<>(Serdes.String(), () -> "0/0",
        (key, value, agg) -> addFractions(agg, value + "/1"), (key, l, r) -> addFractions(l, r));

    /**
     * Comma-joined values. Order, read from Kafka's code: a session's value is its merged
     * sessions' values in the order findSessions returns them (end, then start, ascending), then
     * the new record's value; a new sliding window starts from a copy of an existing window's
     * value; a record's value is appended to every window it updates. So the order is arrival
     * order within a window's history, not event-time order.
     */
    static final Agg<String> CONCAT = new Agg<>(Serdes.String(), () -> "",
        (key, value, agg) -> joinCsv(agg, Long.toString(value)),
        (key, left, right) -> joinCsv(left, right));

    static final Map<String, Agg<?>> BY_NAME = Map.of(
        "count", COUNT, "sum", SUM, "min", MIN, "max", MAX, "mean", MEAN, "concat", CONCAT);

    /** "a" + "b" -> "a,b"; an empty side contributes nothing (the initializer is ""). */
    static String joinCsv(final String left, final String right) {
        if (left.isEmpty()) {
            return right;
        }
        if (right.isEmpty()) {
            return left;
        }
        return left + "," + right;
    }

    /** "s1/c1" + "s2/c2" -> "(s1+s2)/(c1+c2)": sums and counts of the two parts. */
    static String addFractions(final String left, final String right) {
        final String[] l = left.split("/");
        final String[] r = right.split("/");
        return (Long.parseLong(l[0]) + Long.parseLong(r[0])) + "/"
            + (Long.parseLong(l[1]) + Long.parseLong(r[1]));
    }
}
