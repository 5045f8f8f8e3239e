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
 *  "agg": "count" | "sum" | "concat",
 *  "emit": "update" | "final",
 *  "records": [[key, timestamp_ms, value], ...]}   (arrival order)
 * </pre>
 *
 * Unknown fields, missing fields and wrongly typed values are rejected, so that a typo in a
 * test never silently turns into a different topology.
 */
final class CaseSpec {
    private static final Set<String> SESSION_FIELDS =
        Set.of("window", "gap", "grace", "retention", "restart_before", "agg", "emit",
            "records");
    private static final Set<String> SLIDING_FIELDS =
        Set.of("window", "time_difference", "grace", "retention", "restart_before", "agg",
            "emit", "records");

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

    private CaseSpec(final String window, final long gap, final long timeDifference,
                     final long grace, final Long retention, final String agg,
                     final String emit,
                     final List<Driver.InputRecord> records,
                     final Set<Integer> restartBefore) {
        this.window = window;
        this.gap = gap;
        this.timeDifference = timeDifference;
        this.grace = grace;
        this.retention = retention;
        this.agg = agg;
        this.emit = emit;
        this.records = records;
        this.restartBefore = restartBefore;
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
        final String agg = text(node, "agg", Set.of("count", "sum", "concat"));
        final String emit = text(node, "emit", Set.of("update", "final"));

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
        final Set<Integer> restartBefore = new HashSet<>();
        final JsonNode restarts = node.get("restart_before");
        if (restarts != null) {
            if (!restarts.isArray()) {
                throw new IllegalArgumentException("'restart_before' must be an array of indices");
            }
            for (final JsonNode i : restarts) {
                if (!i.isInt() || i.intValue() < 0 || i.intValue() >= records.size()) {
                    throw new IllegalArgumentException("bad index in 'restart_before': " + i);
                }
                restartBefore.add(i.intValue());
            }
        }
        return new CaseSpec(window, gap, timeDifference, grace, retention, agg, emit, records,
            restartBefore);
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
