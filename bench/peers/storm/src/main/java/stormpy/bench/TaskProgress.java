package stormpy.bench;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Map;
import org.apache.storm.Config;

/**
 * How the word count reports its progress when it runs on worker JVMs of a real Storm cluster
 * (see {@link ClusterBench}), where the bench's process cannot read the bolts' counters: every
 * task that counts words keeps its own count and the {@link System#nanoTime} of its last word,
 * and writes them, with its worker's pid and memory, to {@code DIR/NAME-TASK.json} on each tick
 * tuple (once a second; an atomic rename, so a reader never sees half a file).
 *
 * <p>{@code System.nanoTime} is {@code CLOCK_MONOTONIC} on Linux, one clock for every process of
 * the host, so the stamps of the two workers and the spout's compare. Counting reads the clock
 * once per word (tens of nanoseconds, next to microseconds of a word's path through Storm).
 */
final class TaskProgress implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The component configuration that makes Storm send a task a tick tuple every second. */
    static Map<String, Object> ticking() {
        Map<String, Object> conf = new HashMap<>();
        conf.put(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 1);
        return conf;
    }

    private final String dir;
    private final String name;
    private transient long count;
    private transient long last;

    TaskProgress(String dir, String name) {
        this.dir = dir;
        this.name = name;
    }

    /** One word counted. */
    void count() {
        count++;
        last = System.nanoTime();
    }

    /** Write this task's progress: {@code count}, {@code last} (ns), {@code pid} and the
     * worker's {@code rss_kb}, {@code hwm_kb}. */
    void write(int task) {
        write(task, "\"count\": " + count + ", \"last\": " + last);
    }

    /** Write {@code fields} (JSON members) with the worker's pid and memory for this task. */
    void write(int task, String fields) {
        long pid = ProcessHandle.current().pid();
        long[] mem = WordCountBench.memory(pid);
        String doc = "{" + fields + ", \"pid\": " + pid + ", \"rss_kb\": " + mem[0]
                + ", \"hwm_kb\": " + mem[1] + "}\n";
        Path target = Paths.get(dir, name + "-" + task + ".json");
        Path tmp = Paths.get(dir, "." + name + "-" + task + ".tmp");
        try {
            Files.write(tmp, doc.getBytes(StandardCharsets.UTF_8));
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("progress file " + target, e);
        }
    }
}
