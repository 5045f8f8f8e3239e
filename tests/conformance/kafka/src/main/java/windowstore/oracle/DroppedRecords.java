package windowstore.oracle;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.streams.TopologyTestDriver;

/**
 * Kafka's count of dropped records: the task-level sensor that the window aggregates record
 * for a record dropped whole (too late) and for each skipped update of a closed window
 * ({@code TaskMetrics.droppedRecordsSensor}, metric {@code dropped-records-total} of group
 * {@code stream-task-metrics}), read from the driver's metrics.
 */
final class DroppedRecords {
    static final String NAME = "dropped-records-total";
    static final String GROUP = "stream-task-metrics";

    private DroppedRecords() {
    }

    /** The driver's dropped-records metrics (one per task), looked up once per driver. */
    static List<Metric> of(final TopologyTestDriver driver) {
        final List<Metric> found = new ArrayList<>();
        for (final Map.Entry<MetricName, ? extends Metric> e : driver.metrics().entrySet()) {
            final MetricName name = e.getKey();
            if (name.name().equals(NAME) && name.group().equals(GROUP)) {
                found.add(e.getValue());
            }
        }
        if (found.isEmpty()) {
            throw new IllegalStateException("no metric " + GROUP + "/" + NAME + " in the driver");
        }
        return found;
    }

    /** The total of the metrics so far. */
    static long total(final List<Metric> metrics) {
        double total = 0;
        for (final Metric m : metrics) {
            total += ((Number) m.metricValue()).doubleValue();
        }
        return Math.round(total);
    }
}
