package stormpy.bench;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import net.minidev.json.JSONValue;
import org.apache.storm.Config;
import org.apache.storm.LocalCluster;
import org.apache.storm.generated.KillOptions;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.ShellBolt;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.IRichBolt;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;

/**
 * One multilang shell component on Apache Storm's LocalCluster, recording what it emits, so that
 * the same component file can be run under stormpy and the outputs compared.
 *
 * <p>Usage: {@code java ... stormpy.bench.ShellComponentRun SENTENCES_FILE PYTHON SCRIPT OUT}.
 * The topology: {@code sentences} (a reliable spout: each line of SENTENCES_FILE once, a failed
 * one again) → {@code probe} (a ShellBolt running {@code PYTHON SCRIPT} in the jar's
 * {@code resources/}, declaring the default stream [word, position] and {@code shape} [sentence,
 * words, quarter, first, nothing, even, targets]) → {@code sink} (both shuffled), which records every
 * tuple it receives as the JSON line {@code [stream, values]}. Once every sentence is acked the
 * lines are written to OUT and one JSON line {@code {"tuples", "acked", "failed"}} goes to
 * stdout; on a timeout (300 s) an {@code {"error"}} line and exit code 1.
 */
public final class ShellComponentRun {
    static String[] lines = new String[0];
    static final AtomicLong ACKED = new AtomicLong();
    static final AtomicLong FAILED = new AtomicLong();
    static final ConcurrentLinkedQueue<String> RECORDED = new ConcurrentLinkedQueue<>();

    private ShellComponentRun() {}

    /** Each line once with its index as message id; a failed line is emitted again. */
    public static final class LineSpout extends ReplayingLineSpout {
        LineSpout() {
            super(true);
        }

        @Override
        protected String[] lines() {
            return lines;
        }

        @Override
        protected void acked(int total) {
            ACKED.incrementAndGet();
        }

        @Override
        protected void failed() {
            FAILED.incrementAndGet();
        }
    }

    /** The shell component under test. */
    public static final class Probe extends ShellBolt implements IRichBolt {
        Probe(String python, String script) {
            super(python, script);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("word", "position"));
            declarer.declareStream("shape", new Fields("sentence", "words", "quarter", "first",
                    "nothing", "even", "targets"));
        }

        @Override
        public Map<String, Object> getComponentConfiguration() {
            return null;
        }
    }

    /** Records every tuple as [stream, values] (JSON) and acks it. */
    public static final class Sink extends BaseRichBolt {
        private transient OutputCollector collector;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext context,
                            OutputCollector collector) {
            this.collector = collector;
        }

        @Override
        public void execute(Tuple tuple) {
            List<Object> values = new ArrayList<>(tuple.getValues());
            RECORDED.add(JSONValue.toJSONString(Arrays.asList(tuple.getSourceStreamId(), values)));
            collector.ack(tuple);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: ShellComponentRun SENTENCES_FILE PYTHON SCRIPT OUT");
            System.exit(2);
        }
        lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8).toArray(new String[0]);
        Path out = Paths.get(args[3]);
        TopologyBuilder b = new TopologyBuilder();
        b.setSpout("sentences", new LineSpout(), 1);
        b.setBolt("probe", new Probe(args[1], args[2]), 1).shuffleGrouping("sentences");
        b.setBolt("sink", new Sink(), 1).shuffleGrouping("probe")
                .shuffleGrouping("probe", "shape");
        Config conf = new Config();
        conf.setNumWorkers(1);
        conf.setNumAckers(1);
        int code = 0;
        try (LocalCluster cluster = new LocalCluster()) {
            cluster.submitTopology("shell-component", conf, b.createTopology());
            long deadline = System.nanoTime() + 300_000_000_000L;
            while (ACKED.get() < lines.length && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            if (ACKED.get() < lines.length) {
                System.out.println("{\"error\": \"timed out: " + ACKED.get() + " of "
                        + lines.length + " sentences acked\"}");
                code = 1;
            } else {
                Files.write(out, new ArrayList<>(RECORDED), StandardCharsets.UTF_8);
                System.out.println("{\"tuples\": " + RECORDED.size() + ", \"acked\": "
                        + ACKED.get() + ", \"failed\": " + FAILED.get() + "}");
            }
            System.out.flush();
            KillOptions kill = new KillOptions();
            kill.set_wait_secs(0);
            cluster.killTopologyWithOpts("shell-component", kill);
        }
        System.exit(code);
    }
}
