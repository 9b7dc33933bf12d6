package stormpy.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.generated.ClusterSummary;
import org.apache.storm.generated.KillOptions;
import org.apache.storm.generated.Nimbus;
import org.apache.storm.generated.SupervisorSummary;
import org.apache.storm.generated.TopologySummary;
import org.apache.storm.utils.NimbusClient;
import org.apache.storm.utils.Utils;

/**
 * The bench's word count ({@link WordCountBench}'s topology) submitted to a real Storm cluster:
 * a Nimbus and a supervisor whose worker JVMs run it, as {@code storm jar} would submit it.
 *
 * <p>Usage: {@code java -Dstorm.jar=TOPOLOGY_JAR -cp TOPOLOGY_JAR:STORM_HOME/lib-worker/*:STORM_HOME/conf
 * stormpy.bench.ClusterBench SENTENCES_FILE PYTHON WORKERS PROGRESS_DIR}: the cluster's
 * {@code storm.yaml} (Nimbus's address) comes from the classpath, as for Storm's own client.
 * It first waits until Nimbus knows a supervisor with WORKERS free slots, then answers the same
 * commands on stdin as {@link WordCountBench} ({@code run WORKLOAD ACKING SPLIT SENTENCES},
 * {@code quit}) with one JSON line each. A round submits a topology of WORKERS workers
 * ({@code topology.workers}), waits until the progress files its tasks write (see
 * {@link TaskProgress}) say every word was counted (and, acking, every sentence acked), and
 * kills it. Its time runs from the spout's first emit to the last word counted (and acked), the
 * clocks of the workers' processes; {@code worker_pids} says how many worker JVMs counted.
 */
public final class ClusterBench {
    private static final Pattern NUMBER = Pattern.compile("\"(\\w+)\": (-?[0-9]+)");
    private static final long DEADLINE_NANOS = 600_000_000_000L;

    private ClusterBench() {}

    /** The numeric members of a progress file. */
    static Map<String, Long> read(Path file) throws IOException {
        Map<String, Long> doc = new HashMap<>();
        Matcher m = NUMBER.matcher(Files.readString(file, StandardCharsets.UTF_8));
        while (m.find()) {
            doc.put(m.group(1), Long.parseLong(m.group(2)));
        }
        return doc;
    }

    /** The progress files of a round whose names start with {@code prefix}. */
    static List<Map<String, Long>> reports(Path dir, String prefix) throws IOException {
        List<Map<String, Long>> docs = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, prefix + "-*.json")) {
            for (Path f : files) {
                docs.add(read(f));
            }
        }
        return docs;
    }

    static void waitForSlots(Nimbus.Iface nimbus, int workers) throws Exception {
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (true) {
            ClusterSummary summary = nimbus.getClusterInfo();
            int free = 0;
            for (SupervisorSummary s : summary.get_supervisors()) {
                free += s.get_num_workers() - s.get_num_used_workers();
            }
            if (free >= workers) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("Nimbus knows " + summary.get_supervisors_size()
                        + " supervisors with " + free + " free slots, not " + workers);
            }
            Thread.sleep(200);
        }
    }

    static boolean alive(Nimbus.Iface nimbus, String name) throws Exception {
        for (TopologySummary s : nimbus.getClusterInfo().get_topologies()) {
            if (s.get_name().equals(name)) {
                return true;
            }
        }
        return false;
    }

    static String run(Nimbus.Iface nimbus, Path progressRoot, int round, String file,
                      String[] all, String workload, boolean acking, boolean pythonSplit,
                      String python, int limit, int workers) throws Exception {
        int sentences = Math.min(limit, all.length);
        long expected = 0;
        for (int i = 0; i < sentences; i++) {
            expected += all[i].split(" ").length;
        }
        Path dir = progressRoot.resolve("round-" + round);
        Files.createDirectories(dir);
        waitForSlots(nimbus, workers);
        Config conf = WordCountBench.roundConfig(workers, acking);
        String name = "wordcount-" + round;
        long submitted = System.nanoTime();
        StormSubmitter.submitTopology(name, conf, WordCountBench.topology(
                workload.equals("running"), acking, pythonSplit, python, workers, file,
                sentences, dir.toAbsolutePath().toString()));
        long deadline = submitted + DEADLINE_NANOS;
        long counted = 0;
        long acked = 0;
        List<Map<String, Long>> counts;
        List<Map<String, Long>> spout;
        while (true) {
            counts = reports(dir, "count");
            spout = reports(dir, "spout");
            counted = counts.stream().mapToLong(d -> d.get("count")).sum();
            acked = spout.isEmpty() ? 0 : spout.get(0).get("acked");
            if (counted == expected && (!acking || acked == sentences)) {
                break;
            }
            if (counted > expected) {
                throw new IllegalStateException("round " + round + " counted " + counted
                        + " words, expected " + expected);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("round " + round + " did not finish: counted "
                        + counted + " of " + expected + ", acked " + acked + " of " + sentences);
            }
            Thread.sleep(50);
        }
        long first = spout.get(0).get("first");
        long end = counts.stream().mapToLong(d -> d.get("last")).max().orElseThrow();
        if (acking) {
            end = Math.max(end, spout.get(0).get("last"));
        }
        // the newest report of each worker JVM (pid): its RSS and peak RSS
        Map<Long, long[]> workerMemory = new TreeMap<>();
        List<Map<String, Long>> everyReport = new ArrayList<>(counts);
        everyReport.addAll(spout);
        for (Map<String, Long> d : everyReport) {
            long[] m = workerMemory.computeIfAbsent(d.get("pid"), k -> new long[2]);
            m[0] = Math.max(m[0], d.get("rss_kb"));
            m[1] = Math.max(m[1], d.get("hwm_kb"));
        }
        long countingPids = counts.stream().mapToLong(d -> d.get("pid")).distinct().count();
        long rss = 0;
        long hwm = 0;
        StringBuilder perWorker = new StringBuilder();
        for (long[] m : workerMemory.values()) {
            rss += m[0];
            hwm += m[1];
            perWorker.append(perWorker.length() == 0 ? "" : ", ").append(m[0]);
        }
        KillOptions kill = new KillOptions();
        kill.set_wait_secs(0);
        nimbus.killTopologyWithOpts(name, kill);
        while (alive(nimbus, name)) {
            Thread.sleep(100);
        }
        return String.format(
                "{\"workload\": \"%s\", \"acking\": %b, \"split\": \"%s\", \"workers\": %d, "
                        + "\"words\": %d, \"sentences\": %d, \"seconds\": %.6f, "
                        + "\"start_seconds\": %.3f, \"worker_pids\": %d, \"jvm_rss_kb\": %d, "
                        + "\"jvm_hwm_kb\": %d, \"worker_rss_kb\": [%s], \"python_hwm_kb\": 0}",
                workload, acking, pythonSplit ? "python" : "java", workers, counted, sentences,
                (end - first) / 1e9, (first - submitted) / 1e9, countingPids, rss, hwm,
                perWorker);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: ClusterBench SENTENCES_FILE PYTHON WORKERS PROGRESS_DIR");
            System.exit(2);
        }
        String file = Paths.get(args[0]).toAbsolutePath().toString();
        String[] all = Files.readAllLines(Paths.get(file), StandardCharsets.UTF_8)
                .toArray(new String[0]);
        long words = 0;
        for (String s : all) {
            words += s.split(" ").length;
        }
        String python = args[1];
        int workers = Integer.parseInt(args[2]);
        Path progressRoot = Paths.get(args[3]);
        Map<String, Object> conf = Utils.readStormConfig();
        try (NimbusClient client = NimbusClient.getConfiguredClient(conf)) {
            Nimbus.Iface nimbus = client.getClient();
            waitForSlots(nimbus, workers);
            System.out.println("{\"ready\": true, \"sentences\": " + all.length
                    + ", \"words\": " + words + "}");
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
                    StandardCharsets.UTF_8));
            int round = 0;
            String line;
            while ((line = in.readLine()) != null) {
                String[] cmd = line.trim().split("\\s+");
                if (cmd[0].equals("quit")) {
                    break;
                }
                if (!WordCountBench.validRun(line, cmd)) {
                    continue;
                }
                System.out.println(run(nimbus, progressRoot, round++, file, all, cmd[1],
                        cmd[2].equals("on"), cmd[3].equals("python"), python,
                        Integer.parseInt(cmd[4]), workers));
                System.out.flush();
            }
        }
        System.exit(0);
    }
}
