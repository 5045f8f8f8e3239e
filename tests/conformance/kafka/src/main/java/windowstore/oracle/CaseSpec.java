package windowstore.oracle;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * One oracle case, parsed strictly from JSON:
 *
 * <pre>
 * {"window": "session" | "sliding",
 *  "gap": ms                 (session only, required),
 *  "time_difference": ms     (sliding only, required),
 *  "grace": ms,
 *  "retention": ms           (optional: the store's retention; default Kafka's own),
 *  "restart_before": [i, ...] (optional: a new driver before these records; see Driver),
 *  "agg": "count" | "sum" | "min" | "max" | "mean" | "concat",
 *  "emit": "update" | "cached" | "final" | "suppress",
 *  "batch_ends": [i, ...]     (emit "cached" only, optional: the records that end a batch;
 *                              the last record always does; see BatchGate),
 *  "records": [[key, timestamp_ms, value], ...]}   (arrival order)
 * </pre>
 *
 * <p>Emit modes: "update" forwards every update (no cache); "cached" puts the record cache in
 * front of the store and flushes it after each batch; "final" is
 * {@code EmitStrategy.onWindowClose()}; "suppress" is emit-on-update followed by
 * {@code suppress(Suppressed.untilWindowCloses(unbounded()))}.
 *
 * Unknown fields, missing fields and wrongly typed values are rejected, so that a typo in a
 * test never silently turns into a different topology.
 */
final class CaseSpec {
    private static final Set<String> SESSION_FIELDS =
        Set.of("window", "gap", "grace", "retention", "restart_before", "agg", "emit",
            "batch_ends", "records");
    private static final Set<String> SLIDING_FIELDS =
        Set.of("window", "time_difference", "grace", "retention", "restart_before", "agg",
            "emit", "batch_ends", "records");

    final String window;
    final long gap;
    final long timeDifference;
    final long grace;
    /** The store's retention in ms, or null for Kafka's default. */
    final Long retention;
    final String agg;
    final String emit;
    final List<Driver.InputRecord> records;
    /** Indices of the records before which the driver is restarted. */
    final Set<Integer> restartBefore;
    /** Indices of the records that end a batch (emit "cached"; the last record always does). */
    final Set<Integer> batchEnds;

    private CaseSpec(final String window, final long gap, final long timeDifference,
                     final long grace, final Long retention, final String agg,
                     final String emit,
                     final List<Driver.InputRecord> records,
                     final Set<Integer> restartBefore,
                     final Set<Integer> batchEnds) {
        this.window = window;
        this.gap = gap;
        this.timeDifference = timeDifference;
        this.grace = grace;
        this.retention = retention;
        this.agg = agg;
        this.emit = emit;
        this.records = records;
        this.restartBefore = restartBefore;
        this.batchEnds = batchEnds;
    }

    static CaseSpec parse(final JsonNode node) {
        if (node == null || !node.isObject()) {
            throw new IllegalArgumentException("a case must be a JSON object");
        }
        final String window = text(node, "window", Set.of("session", "sliding"));
        final Set<String> allowed = window.equals("session") ? SESSION_FIELDS : SLIDING_FIELDS;
        final Iterator<String> names = node.fieldNames();
        while (names.hasNext()) {
            final String name = names.next();
            if (!allowed.contains(name)) {
                throw new IllegalArgumentException(
                    "unexpected field '" + name + "' for a " + window + " case");
            }
        }
        final long gap = window.equals("session") ? integer(node, "gap") : -1L;
        final long timeDifference = window.equals("sliding") ? integer(node, "time_difference") : -1L;
        final long grace = integer(node, "grace");
        final Long retention = node.has("retention") ? integer(node, "retention") : null;
        final String agg = text(node, "agg", Aggs.BY_NAME.keySet());
        final String emit = text(node, "emit", Set.of("update", "cached", "final", "suppress"));

        final JsonNode recs = node.get("records");
        if (recs == null || !recs.isArray()) {
            throw new IllegalArgumentException("'records' must be an array");
        }
        final List<Driver.InputRecord> records = new ArrayList<>(recs.size());
        for (int i = 0; i < recs.size(); i++) {
            final JsonNode r = recs.get(i);
            if (!r.isArray() || r.size() != 3 || !r.get(0).isTextual()
                    || !r.get(1).isIntegralNumber() || !r.get(2).isIntegralNumber()
                    || !r.get(1).canConvertToLong() || !r.get(2).canConvertToLong()) {
                throw new IllegalArgumentException(
                    "record " + i + " must be [key:str, timestamp:int, value:int], got " + r);
            }
            records.add(new Driver.InputRecord(
                r.get(0).textValue(), r.get(1).longValue(), r.get(2).longValue()));
        }
        final Set<Integer> restartBefore = indices(node, "restart_before", records.size());
        final Set<Integer> batchEnds = indices(node, "batch_ends", records.size());
        if (node.has("batch_ends") && !emit.equals("cached")) {
            throw new IllegalArgumentException("'batch_ends' needs emit 'cached'");
        }
        if (emit.equals("cached") && !restartBefore.isEmpty()) {
            throw new IllegalArgumentException("'restart_before' cannot split a cached batch");
        }
        if (!records.isEmpty()) {
            batchEnds.add(records.size() - 1);
        }
        return new CaseSpec(window, gap, timeDifference, grace, retention, agg, emit, records,
            restartBefore, batchEnds);
    }

    /** An optional array of record indices. */
    private static Set<Integer> indices(final JsonNode node, final String field, final int n) {
        final Set<Integer> out = new HashSet<>();
        final JsonNode values = node.get(field);
        if (values == null) {
            return out;
        }
        if (!values.isArray()) {
            throw new IllegalArgumentException("'" + field + "' must be an array of indices");
        }
        for (final JsonNode i : values) {
            if (!i.isInt() || i.intValue() < 0 || i.intValue() >= n) {
                throw new IllegalArgumentException("bad index in '" + field + "': " + i);
            }
            out.add(i.intValue());
        }
        return out;
    }

    private static String text(final JsonNode node, final String field, final Set<String> values) {
        final JsonNode v = node.get(field);
        if (v == null || !v.isTextual() || !values.contains(v.textValue())) {
            throw new IllegalArgumentException("'" + field + "' must be one of " + values
                + ", got " + v);
        }
        return v.textValue();
    }

    private static long integer(final JsonNode node, final String field) {
        final JsonNode v = node.get(field);
        if (v == null || !v.isIntegralNumber() || !v.canConvertToLong()) {
            throw new IllegalArgumentException("'" + field + "' must be an integer, got " + v);
        }
        return v.longValue();
    }
}
