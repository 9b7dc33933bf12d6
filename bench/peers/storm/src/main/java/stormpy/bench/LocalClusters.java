package stormpy.bench;

import org.apache.storm.LocalCluster;
import org.apache.storm.generated.KillOptions;
import org.apache.storm.generated.TopologySummary;

/** What the peers do with a LocalCluster between rounds. */
final class LocalClusters {
    private LocalClusters() {}

    /** Whether the topology {@code name} is still in the cluster. */
    static boolean alive(LocalCluster cluster, String name) throws Exception {
        for (TopologySummary s : cluster.getClusterInfo().get_topologies()) {
            if (s.get_name().equals(name)) {
                return true;
            }
        }
        return false;
    }

    /** Kill the topology {@code name} at once and wait until the cluster no longer has it. */
    static void killAndWait(LocalCluster cluster, String name) throws Exception {
        KillOptions kill = new KillOptions();
        kill.set_wait_secs(0);
        cluster.killTopologyWithOpts(name, kill);
        while (alive(cluster, name)) {
            Thread.sleep(50);
        }
    }
}
