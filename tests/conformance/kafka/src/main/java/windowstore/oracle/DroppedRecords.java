package windowstore.oracle;

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

    /** The driver's dropped-records total so far (summed over its tasks). */
    static long total(final TopologyTestDriver driver) {
        double total = 0;
        boolean found = false;
        for (final Map.Entry<MetricName, ? extends Metric> e : driver.metrics().entrySet()) {
            final MetricName name = e.getKey();
            if (name.name().equals(NAME) && name.group().equals(GROUP)) {
                total += ((Number) e.getValue().metricValue()).doubleValue();
                found = true;
            }
        }
        if (!found) {
            throw new IllegalStateException("no metric " + GROUP + "/" + NAME + " in the driver");
        }
        return Math.round(total);
    }
}
