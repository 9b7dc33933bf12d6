package stormpy.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.storm.Config;
import org.apache.storm.LocalCluster;
import org.apache.storm.generated.StormTopology;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.ShellBolt;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.BasicOutputCollector;
import org.apache.storm.topology.IRichBolt;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseBasicBolt;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;
import org.apache.storm.utils.TupleUtils;

/**
 * The bench's word count (the README's topology) on Apache Storm's LocalCluster, in one JVM
 * (with a third argument 2: on two workers exchanging tuples over Netty, see main).
 *
 * <p>Usage: {@code java ... stormpy.bench.WordCountBench SENTENCES_FILE PYTHON}. The sentences
 * (one per line) are the file the Python bench writes from its own generator. Commands on stdin,
 * one per line, each answered by one JSON line on stdout:
 * {@code run WORKLOAD ACKING SPLIT SENTENCES} (the first SENTENCES of the file; workload {@code final} or {@code running}, acking {@code on}
 * or {@code off}, split {@code java} or {@code python}: the split bolt as a ShellBolt running
 * {@code resources/splitter.py} with Storm's {@code storm.py}), and {@code quit}.
 *
 * <p>Every topology has one task per component, as the stormpy local runs: sentences (spout) →
 * split (shuffle) → count (fields on word), and for {@code running} → sink (fields on word).
 * A round is timed from the spout's first emit to the last word counted (the count bolt for
 * {@code final}, the sink for {@code running}) and, with acking, to the last sentence acked;
 * the bolts read no clock per word (the one that counts the last word stamps the time).
 */
public final class WordCountBench {
    static String[] all = new String[0];
    /** The sentences of the current round (the first LIMIT of the file) and their words. */
    static String[] sentences = new String[0];
    static long expectedWords;

    static final AtomicLong COUNTED = new AtomicLong();
    static final AtomicLong ACKED = new AtomicLong();
    static volatile long firstEmit;
    static volatile long lastCounted;
    static volatile long lastAcked;

    private WordCountBench() {}

    /** The README's SentenceSpout: one sentence per nextTuple, with a message id when reliable.
     * On a cluster ({@code progress} set) it reads the first {@code limit} lines of
     * {@code file} when it opens and writes its first emit's and last ack's clocks. */
    public static final class SentenceSpout extends ReplayingLineSpout {
        private final String file;
        private final int limit;
        private final TaskProgress progress;
        private transient int task;

        SentenceSpout(boolean reliable) {
            this(reliable, null, 0, null);
        }

        SentenceSpout(boolean reliable, String file, int limit, TaskProgress progress) {
            super(reliable);
            this.file = file;
            this.limit = limit;
            this.progress = progress;
        }

        @Override
        public void open(Map<String, Object> conf, TopologyContext context,
                         SpoutOutputCollector collector) {
            if (file != null) {
                try {
                    List<String> lines = Files.readAllLines(Paths.get(file),
                            StandardCharsets.UTF_8);
                    sentences = lines.subList(0, Math.min(limit, lines.size()))
                            .toArray(new String[0]);
                } catch (IOException e) {
                    throw new UncheckedIOException("sentences file " + file, e);
                }
            }
            task = context.getThisTaskId();
            super.open(conf, context, collector);
        }

        @Override
        protected String[] lines() {
            return sentences;
        }

        @Override
        protected void emitting() {
            if (firstEmit == 0) {
                firstEmit = System.nanoTime();
                if (progress != null) {
                    progress.write(task, "\"first\": " + firstEmit + ", \"acked\": 0");
                }
            }
        }

        @Override
        protected void acked(int total) {
            if (ACKED.incrementAndGet() == total) {
                lastAcked = System.nanoTime();
                if (progress != null) {
                    progress.write(task, "\"first\": " + firstEmit + ", \"acked\": " + total
                            + ", \"last\": " + lastAcked);
                }
            }
        }
    }

    /** The README's SplitSentence: a basic bolt (anchors and acks itself), one word per emit. */
    public static final class SplitSentence extends BaseBasicBolt {
        @Override
        public void execute(Tuple tuple, BasicOutputCollector collector) {
            for (String word : tuple.getStringByField("sentence").split(" ")) {
                collector.emit(new Values(word));
            }
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("word"));
        }
    }

    /** SplitSentence in Python through Storm's multilang protocol (resources/splitter.py). */
    public static final class PythonSplitSentence extends ShellBolt implements IRichBolt {
        PythonSplitSentence(String python) {
            super(python, "splitter.py");
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

    static void counted() {
        if (COUNTED.incrementAndGet() == expectedWords) {
            lastCounted = System.nanoTime();
        }
    }

    /** The README's WordCount: counts, (running) emits [word, count] anchored, acks. On a
     * cluster ({@code progress} set) a final count reports its progress on each tick. */
    public static final class WordCount extends BaseRichBolt {
        private final boolean emits;
        private final TaskProgress progress;
        private transient OutputCollector collector;
        private transient HashMap<String, Integer> counts;
        private transient int task;

        WordCount(boolean emits) {
            this(emits, null);
        }

        WordCount(boolean emits, TaskProgress progress) {
            this.emits = emits;
            this.progress = progress;
        }

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext context,
                            OutputCollector collector) {
            this.collector = collector;
            this.counts = new HashMap<>();
            this.task = context.getThisTaskId();
        }

        @Override
        public void execute(Tuple tuple) {
            if (progress != null && TupleUtils.isTick(tuple)) {
                progress.write(task);
                return;
            }
            String word = tuple.getStringByField("word");
            int count = counts.merge(word, 1, Integer::sum);
            if (emits) {
                collector.emit(tuple, new Values(word, count));
            } else if (progress != null) {
                progress.count();
            } else {
                counted();
            }
            collector.ack(tuple);
        }

        @Override
        public Map<String, Object> getComponentConfiguration() {
            return progress != null && !emits ? TaskProgress.ticking() : null;
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("word", "count"));
        }
    }

    /** Receives the running counts and counts them (the Bytewax sink's work); on a cluster
     * ({@code progress} set) it reports its progress on each tick. */
    public static final class Sink extends BaseRichBolt {
        private final TaskProgress progress;
        private transient OutputCollector collector;
        private transient int task;

        Sink() {
            this(null);
        }

        Sink(TaskProgress progress) {
            this.progress = progress;
        }

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext context,
                            OutputCollector collector) {
            this.collector = collector;
            this.task = context.getThisTaskId();
        }

        @Override
        public void execute(Tuple tuple) {
            if (progress != null) {
                if (TupleUtils.isTick(tuple)) {
                    progress.write(task);
                    return;
                }
                progress.count();
            } else {
                counted();
            }
            collector.ack(tuple);
        }

        @Override
        public Map<String, Object> getComponentConfiguration() {
            return progress != null ? TaskProgress.ticking() : null;
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
        }
    }

    /** The topology; with {@code workers} 2 the split, count (and sink) have a task in each
     * worker, the split takes its worker's sentences (local or shuffle) and the words go to the
     * count tasks by field, so about half of them cross to the other worker. */
    static StormTopology topology(boolean running, boolean acking, boolean pythonSplit,
                                  String python, int workers) {
        return topology(running, acking, pythonSplit, python, workers, null, 0, null);
    }

    /** The topology on a cluster's workers: the spout reads the first {@code limit} sentences
     * of {@code file}; the spout and the counting tasks write their progress to
     * {@code progressDir} (see {@link TaskProgress}). */
    static StormTopology topology(boolean running, boolean acking, boolean pythonSplit,
                                  String python, int workers, String file, int limit,
                                  String progressDir) {
        boolean cluster = progressDir != null;
        TopologyBuilder b = new TopologyBuilder();
        b.setSpout("sentences", cluster
                ? new SentenceSpout(acking, file, limit, new TaskProgress(progressDir, "spout"))
                : new SentenceSpout(acking), 1);
        IRichBolt split = null;
        if (pythonSplit) {
            split = new PythonSplitSentence(python);
            b.setBolt("split", split, workers).localOrShuffleGrouping("sentences");
        } else {
            b.setBolt("split", new SplitSentence(), workers).localOrShuffleGrouping("sentences");
        }
        TaskProgress counting = cluster ? new TaskProgress(progressDir, "count") : null;
        b.setBolt("count", new WordCount(running, running ? null : counting), workers)
                .fieldsGrouping("split", new Fields("word"));
        if (running) {
            b.setBolt("sink", new Sink(counting), workers)
                    .fieldsGrouping("count", new Fields("word"));
        }
        return b.createTopology();
    }

    /** VmRSS and VmHWM (kB) of a process, from /proc; -1 when not readable. */
    static long[] memory(long pid) {
        long rss = -1;
        long hwm = -1;
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/" + pid + "/status"))) {
                if (line.startsWith("VmRSS:")) {
                    rss = Long.parseLong(line.replaceAll("[^0-9]", ""));
                } else if (line.startsWith("VmHWM:")) {
                    hwm = Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | RuntimeException e) {
            // the process ended
        }
        return new long[] {rss, hwm};
    }

    /** Live threads of a worker's executors (Storm names them "...-executor[first last]"). */
    static int workerThreads() {
        int n = 0;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().contains("executor[")) {
                n++;
            }
        }
        return n;
    }

    static String run(LocalCluster cluster, int round, String workload, boolean acking,
                      boolean pythonSplit, String python, int limit, int workers)
            throws Exception {
        boolean running = workload.equals("running");
        sentences = java.util.Arrays.copyOf(all, Math.min(limit, all.length));
        long words = 0;
        for (String s : sentences) {
            words += s.split(" ").length;
        }
        expectedWords = words;
        COUNTED.set(0);
        ACKED.set(0);
        firstEmit = 0;
        lastCounted = 0;
        lastAcked = 0;
        Config conf = roundConfig(workers, acking);
        String name = "wordcount-" + round;
        long submitted = System.nanoTime();
        cluster.submitTopology(name, conf, topology(running, acking, pythonSplit, python, workers));
        long deadline = submitted + 600_000_000_000L;
        while (lastCounted == 0 || (acking && lastAcked == 0)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("round " + round + " did not finish: counted "
                        + COUNTED.get() + " of " + expectedWords + ", acked " + ACKED.get());
            }
            Thread.sleep(5);
        }
        long end = acking ? Math.max(lastCounted, lastAcked) : lastCounted;
        long self = ProcessHandle.current().pid();
        long[] jvm = memory(self);
        long childRss = 0;
        for (ProcessHandle child : (Iterable<ProcessHandle>) ProcessHandle.current().descendants()::iterator) {
            long[] m = memory(child.pid());
            childRss += Math.max(m[1], 0);
        }
        LocalClusters.killAndWait(cluster, name);
        while (workerThreads() > 0) {
            Thread.sleep(50);
        }
        return String.format(
                "{\"workload\": \"%s\", \"acking\": %b, \"split\": \"%s\", \"workers\": "
                        + workers + ", \"words\": %d, "
                        + "\"sentences\": %d, \"seconds\": %.6f, \"start_seconds\": %.3f, "
                        + "\"jvm_rss_kb\": %d, \"jvm_hwm_kb\": %d, \"python_hwm_kb\": %d}",
                workload, acking, pythonSplit ? "python" : "java", COUNTED.get(),
                sentences.length, (end - firstEmit) / 1e9, (firstEmit - submitted) / 1e9,
                jvm[0], jvm[1], childRss);
    }

    /** Whether {@code cmd} (the words of {@code line}) is a valid {@code run} command; if not,
     * answers the error line on stdout. */
    /** A round's topology config: its workers, one acker and max spout pending 5,000 when
     *  acking (none and unbounded otherwise), as the stormpy rows run. */
    static Config roundConfig(int workers, boolean acking) {
        Config conf = new Config();
        conf.setNumWorkers(workers);
        conf.setNumAckers(acking ? 1 : 0);
        if (acking) {
            conf.setMaxSpoutPending(5000);
        }
        return conf;
    }

    static boolean validRun(String line, String[] cmd) {
        if (cmd.length != 5 || !cmd[0].equals("run") || !cmd[4].matches("[0-9]+")
                || !(cmd[1].equals("final") || cmd[1].equals("running"))
                || !(cmd[2].equals("on") || cmd[2].equals("off"))
                || !(cmd[3].equals("java") || cmd[3].equals("python"))) {
            System.out.println("{\"error\": \"bad command: " + line.replace("\"", "'")
                    + " (run final|running on|off java|python SENTENCES, or quit)\"}");
            System.out.flush();
            return false;
        }
        return true;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2 && args.length != 3) {
            System.err.println("usage: WordCountBench SENTENCES_FILE PYTHON [WORKERS]");
            System.exit(2);
        }
        // WORKERS 2: two workers in the LocalCluster (two supervisors of one slot each) that
        // exchange tuples over Storm's Netty transport (storm.local.mode.zmq, as Storm's own
        // integration tests run it), not its in-JVM queues; still one JVM
        int workers = args.length == 3 ? Integer.parseInt(args[2]) : 1;
        Path file = Paths.get(args[0]);
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        all = lines.toArray(new String[0]);
        long words = 0;
        for (String s : all) {
            words += s.split(" ").length;
        }
        String python = args[1];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
                StandardCharsets.UTF_8));
        try (LocalCluster cluster = workers > 1
                ? new LocalCluster.Builder().withSupervisors(workers).withPortsPerSupervisor(1)
                        .withDaemonConf("storm.local.mode.zmq", true).build()
                : new LocalCluster()) {
            System.out.println("{\"ready\": true, \"sentences\": " + all.length
                    + ", \"words\": " + words + "}");
            System.out.flush();
            int round = 0;
            String line;
            while ((line = in.readLine()) != null) {
                String[] cmd = line.trim().split("\\s+");
                if (cmd[0].equals("quit")) {
                    break;
                }
                if (!validRun(line, cmd)) {
                    continue;
                }
                System.out.println(run(cluster, round++, cmd[1], cmd[2].equals("on"),
                        cmd[3].equals("python"), python, Integer.parseInt(cmd[4]), workers));
                System.out.flush();
            }
        }
        System.exit(0);
    }
}
