package stormpy.bench;

import java.util.ArrayDeque;
import java.util.Map;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichSpout;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Values;

/**
 * The peers' spout: each line of the current run once as [sentence], its index the message id
 * when reliable (no message id otherwise), a failed line emitted again. Subclasses give the
 * lines (read when the spout opens) and count what is acked and failed.
 */
public abstract class ReplayingLineSpout extends BaseRichSpout {
    private final boolean reliable;
    private transient SpoutOutputCollector collector;
    private transient String[] lines;
    private transient ArrayDeque<Integer> replay;
    private transient int next;

    protected ReplayingLineSpout(boolean reliable) {
        this.reliable = reliable;
    }

    /** The lines of the run. */
    protected abstract String[] lines();

    /** Called before each emit (a first-emit clock, for example). */
    protected void emitting() {
    }

    /** One line was acked; the run has {@code total} lines. */
    protected abstract void acked(int total);

    /** One line failed (it is emitted again). */
    protected void failed() {
    }

    @Override
    public void open(Map<String, Object> conf, TopologyContext context,
                     SpoutOutputCollector collector) {
        this.collector = collector;
        this.lines = lines();
        this.replay = new ArrayDeque<>();
        this.next = 0;
    }

    @Override
    public void nextTuple() {
        int i;
        if (!replay.isEmpty()) {
            i = replay.pop();
        } else if (next < lines.length) {
            i = next++;
        } else {
            return;
        }
        emitting();
        if (reliable) {
            collector.emit(new Values(lines[i]), i);
        } else {
            collector.emit(new Values(lines[i]));
        }
    }

    @Override
    public void ack(Object msgId) {
        acked(lines.length);
    }

    @Override
    public void fail(Object msgId) {
        failed();
        replay.push((Integer) msgId);
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        declarer.declare(new Fields("sentence"));
    }
}
