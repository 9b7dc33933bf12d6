package stormpy.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.storm.Config;
import org.apache.storm.LocalCluster;
import org.apache.storm.generated.StormTopology;
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
 * The multilang bench's shell split bolt on Apache Storm's LocalCluster: the peer row of
 * {@code python -m bench.multilang_bench}.
 *
 * <p>Usage: {@code java ... stormpy.bench.ShellSplitBench SENTENCES_FILE COMMAND...}: COMMAND
 * is the split bolt's subprocess (the same command line the stormpy shell row runs: pystorm's
 * split bolt through {@code stormpy.multilang.pystorm_run}, JSON). Commands on stdin, one per
 * line, each answered by one JSON line on stdout: {@code run SENTENCES} (the first SENTENCES of
 * the file) and {@code quit}.
 *
 * <p>Each round submits sentences (a reliable spout: message ids, a failed sentence sent again)
 * → split (a ShellBolt running COMMAND, one task, shuffle) → sink (counts the words and acks
 * them), one worker, one acker, {@code topology.max.spout.pending} 2000, the JSON serializer.
 * As the Python rows, a round is timed from the sink's first word to the spout's last ack, and
 * its CPU seconds are this JVM's and its subprocesses' between those two moments.
 */
public final class ShellSplitBench {
    static String[] all = new String[0];
    static String[] sentences = new String[0];
    static long expectedWords;

    static final AtomicLong WORDS = new AtomicLong();
    static final AtomicLong ACKED = new AtomicLong();
    static volatile long firstWord;
    static volatile double cpuFirst;
    static volatile long lastAcked;
    static volatile double cpuLast;

    private ShellSplitBench() {}

    /** CPU seconds of this JVM (every thread) and of its running descendants. */
    static double cpuSeconds() {
        Duration total = ProcessHandle.current().info().totalCpuDuration().orElse(Duration.ZERO);
        for (ProcessHandle child
                : (Iterable<ProcessHandle>) ProcessHandle.current().descendants()::iterator) {
            total = total.plus(child.info().totalCpuDuration().orElse(Duration.ZERO));
        }
        return total.toNanos() / 1e9;
    }

    /** Each sentence once with its index as message id; a failed one is sent again. */
    public static final class SentenceSpout extends ReplayingLineSpout {
        SentenceSpout() {
            super(true);
        }

        @Override
        protected String[] lines() {
            return sentences;
        }

        @Override
        protected void acked(int total) {
            if (ACKED.incrementAndGet() == total) {
                lastAcked = System.nanoTime();
                cpuLast = cpuSeconds();
            }
        }
    }

    /** The split bolt: a ShellBolt running the given command, declaring [word]. */
    public static final class ShellSplit extends ShellBolt implements IRichBolt {
        ShellSplit(String[] command) {
            super(command);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("word"));
        }

        @Override
        public Map<String, Object> getComponentConfiguration() {
            return null;
        }
    }

    /** Counts the words (the first one stamps the start) and acks each. */
    public static final class CountSink extends BaseRichBolt {
        private transient OutputCollector collector;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext context,
                            OutputCollector collector) {
            this.collector = collector;
        }

        @Override
        public void execute(Tuple tuple) {
            if (WORDS.getAndIncrement() == 0) {
                firstWord = System.nanoTime();
                cpuFirst = cpuSeconds();
            }
            collector.ack(tuple);
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
        }
    }

    static StormTopology topology(String[] command) {
        TopologyBuilder b = new TopologyBuilder();
        b.setSpout("sentences", new SentenceSpout(), 1);
        b.setBolt("split", new ShellSplit(command), 1).shuffleGrouping("sentences");
        b.setBolt("sink", new CountSink(), 1).shuffleGrouping("split");
        return b.createTopology();
    }

    static String run(LocalCluster cluster, int round, String[] command, int limit)
            throws Exception {
        sentences = Arrays.copyOf(all, Math.min(limit, all.length));
        long words = 0;
        for (String s : sentences) {
            words += s.split(" ").length;
        }
        expectedWords = words;
        WORDS.set(0);
        ACKED.set(0);
        firstWord = 0;
        lastAcked = 0;
        Config conf = new Config();
        conf.setNumWorkers(1);
        conf.setNumAckers(1);
        conf.setMaxSpoutPending(2000);
        conf.put(Config.TOPOLOGY_MULTILANG_SERIALIZER,
                "org.apache.storm.multilang.JsonSerializer");
        String name = "shell-split-" + round;
        cluster.submitTopology(name, conf, topology(command));
        long deadline = System.nanoTime() + 600_000_000_000L;
        while (lastAcked == 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("round " + round + " did not finish: "
                        + ACKED.get() + " of " + sentences.length + " sentences acked");
            }
            Thread.sleep(5);
        }
        long counted = WORDS.get();
        LocalClusters.killAndWait(cluster, name);
        return String.format("{\"sentences\": %d, \"words\": %d, \"counted\": %d, "
                        + "\"seconds\": %.6f, \"cpu_seconds\": %.3f}",
                sentences.length, expectedWords, counted, (lastAcked - firstWord) / 1e9,
                cpuLast - cpuFirst);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: ShellSplitBench SENTENCES_FILE COMMAND...");
            System.exit(2);
        }
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        all = lines.toArray(new String[0]);
        String[] command = Arrays.copyOfRange(args, 1, args.length);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
                StandardCharsets.UTF_8));
        try (LocalCluster cluster = new LocalCluster()) {
            System.out.println("{\"ready\": true, \"sentences\": " + all.length + "}");
            System.out.flush();
            int round = 0;
            String line;
            while ((line = in.readLine()) != null) {
                String[] cmd = line.trim().split("\\s+");
                if (cmd[0].equals("quit")) {
                    break;
                }
                if (cmd.length != 2 || !cmd[0].equals("run") || !cmd[1].matches("[0-9]+")) {
                    System.out.println("{\"error\": \"bad command: " + line.replace("\"", "'")
                            + " (run SENTENCES, or quit)\"}");
                } else {
                    System.out.println(run(cluster, round++, command, Integer.parseInt(cmd[1])));
                }
                System.out.flush();
            }
        }
        System.exit(0);
    }
}
