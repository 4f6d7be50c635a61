import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.RuntimeMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Runs SciMark 2.0's own command line (jnt.scimark2.commandline) several times in one JVM, so
 * the first run (JIT compilation still under way) and the later ones (steady state) are
 * measured apart. Prints the JVM's effective settings first, then each run's SciMark report
 * framed by "vb-iteration N start_ms=... end_ms=..." lines timed as JVM uptime.
 *
 * usage: VbScimark ITERATIONS [SciMark arguments: -large, MIN_TIME]
 */
public final class VbScimark {
    public static void main(String[] args) throws Exception {
        RuntimeMXBean runtime = ManagementFactory.getRuntimeMXBean();
        long startupMs = runtime.getUptime();
        int iterations = Integer.parseInt(args[0]);
        String[] scimarkArgs = Arrays.copyOfRange(args, 1, args.length);
        List<String> gcs = new ArrayList<>();
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            gcs.add(gc.getName());
        }
        System.out.println("vb-jvm startup_ms: " + startupMs);
        System.out.println("vb-jvm vm: " + System.getProperty("java.vm.name") + " "
                + System.getProperty("java.vm.version"));
        System.out.println("vb-jvm max_heap_mib: " + Runtime.getRuntime().maxMemory() / (1 << 20));
        System.out.println("vb-jvm cpus: " + Runtime.getRuntime().availableProcessors());
        System.out.println("vb-jvm gc: " + String.join(", ", gcs));
        System.out.println("vb-jvm jit: " + ManagementFactory.getCompilationMXBean().getName());
        System.out.println("vb-jvm args: " + String.join(" ", runtime.getInputArguments()));
        for (int i = 1; i <= iterations; i++) {
            System.out.println("vb-iteration " + i + " start_ms=" + runtime.getUptime());
            jnt.scimark2.commandline.main(scimarkArgs);
            System.out.println("vb-iteration " + i + " end_ms=" + runtime.getUptime());
        }
    }
}
