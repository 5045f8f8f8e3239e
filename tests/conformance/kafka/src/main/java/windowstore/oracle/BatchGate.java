package windowstore.oracle;

import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;

/**
 * Holds input records back until the driver opens the gate, then forwards them all within the
 * processing of one input record, each with its own timestamp.
 *
 * <p>TopologyTestDriver commits, and so flushes the record cache, after every input record it
 * processes. With the gate in front of the aggregate, a batch of input records reaches the
 * aggregate (and its cache) between two commits, as one {@code process()} call of windowstore
 * sees them: the cache then coalesces the changes of the whole batch. A value processor keeps
 * the key, so no repartition topic comes between the gate and the aggregate.
 */
final class BatchGate implements FixedKeyProcessor<String, Long, Long> {
    /** Set by the driver before it pipes the last record of a batch. */
    private final boolean[] open;
    private final List<FixedKeyRecord<String, Long>> held = new ArrayList<>();
    private FixedKeyProcessorContext<String, Long> context;

    BatchGate(final boolean[] open) {
        this.open = open;
    }

    @Override
    public void init(final FixedKeyProcessorContext<String, Long> context) {
        this.context = context;
    }

    @Override
    public void process(final FixedKeyRecord<String, Long> record) {
        held.add(record);
        if (open[0]) {
            for (final FixedKeyRecord<String, Long> r : held) {
                context.forward(r);
            }
            held.clear();
        }
    }
}
