"""Every label key virtbench stores, and what it means: the one home of their names.

A sample's labels (`Sample.labels`, stored as JSON with it) and a cell's labels say under
which conditions a figure was taken. Producers (runner, scenarios, workloads, drivers,
platforms) write them; analysis, report and export read them back from the store. Both
sides name a key through the constant here, so a key cannot be renamed on one side only.
Ground level: imports nothing.

Which keys split results into groups (dimensions) and which never do is declared by the
workloads and stored with each run (store/description.py), not here.
"""

from __future__ import annotations

# any sample
INVALID = "invalid"  # why a sample is not a valid measurement (stored valid = 0, never dropped)
WARNING = "warning"  # something odd the tool or scenario saw, the figure still valid
SATURATED = "saturated"  # a measured step past the server's saturation: kept and drawn
THREADS = "threads"  # the tool's thread count
USERS = "users"  # simulated users of the application or conference suite
STREAMS = "streams"  # parallel streams of the network or conference tool
POLICY = "policy"  # the scheduling policy the tool's threads ran under

# a cell (the runner)
PLATFORM = "platform"  # cell label: the platform's own labels (Platform.labels())
PARAMS = "params"  # cell label: the test case's parameters as run
WARMUP = "warmup"  # cell label ({"failed": error}) or export label: how the warm-up went
CLIENT = "client"  # cell label: the remote client host's facts (clock offset, RTT to the target)
OVERLAPPED_RUNS = "overlapped_runs"  # other runs of the host that overlapped this cell
ROUND_POSITION = "round_position"  # where the cell ran in its repetition round (campaign/rounds.py)
DUET = "duet"  # the duet set and partner a cell ran beside (campaign/rounds.py)
DISTURBANCE = (
    "disturbance"  # what else used the machine while the cell ran (metrics/disturbance.py)
)
DISTURBED = "disturbed"  # on a cell past the thresholds: what disturbed it ("steal", ...)
LATER_SCENE_FAILED = "later_scene_failed"  # a finished scene's sample of a cell that failed later
STOP_ERROR = "stop_error"  # a neighbour that could not be stopped cleanly: the error

# platform labels (inside the cell's PLATFORM label)
PLATFORM_TYPE = "platform_type"  # the platform's registered type (native, container, vm)
SPEC_TYPE = "type"  # the same in a stored platform spec (what a platform without labels has)
HOST = "host"  # the platform a stacked platform runs inside (its name)
ENGINE = "engine"  # one engine's effective configuration (platforms/engine_config.py)
HOST_ENGINE = "host_engine"  # a stacked platform's VM engine configuration
ACCEL_USED = "accel_used"  # the accelerator QEMU ran with (kvm or tcg)
ACCEL = "accel"  # export label: the cell's ACCEL_USED, beside each sample
VCPUS = "vcpus"  # a VM's virtual CPUs
DOCKER_NAT = "docker_nat"  # how Docker publishes a nat container's ports (a container option)
NETWORK = "network"  # a container platform's network mode (host, bridge, nat)
CPU_BUDGET = "cpu_budget"  # the CPU budget a co-location environment ran in (cpubudget.py)
CPU_BUDGET_QUOTA_US = "cpu_budget_quota_us"  # that budget's quota, us per period
CPU_BUDGET_PERIOD_US = "cpu_budget_period_us"  # its period, us
CPU_QUOTA_US = "cpu_quota_us"  # a platform's own CFS quota option, us per period
CPU_PERIOD_US = "cpu_period_us"  # its CFS period option, us
CPU_BUDGET_NOTE = "cpu_budget_note"  # what else is known of it (an own budget inside a VM)
CPU_BUDGET_WEIGHT = (
    "cpu_budget_weight"  # its CPU weight against the host's tasks (idle members lend none)
)
CPU_BUDGET_MEMBERS = "cpu_budget_members"  # the environments sharing that budget
CPU_BUDGET_THROTTLED = "cpu_budget_throttled"  # "T/P periods" the shared budget was throttled

# solo peaks (load=PCT)
PEAK_CPU_LIMIT = "peak_cpu_limit"  # the CPU limit a solo peak was measured under: a dimension
PEAK_LOWER_BOUND = "peak_lower_bound"  # a solo peak whose sweep never saturated: a lower bound
SOLO_PEAK = "solo_peak"  # an environment's solo peak rate (per served size)
SOLO_PEAK_METRIC = "solo_peak_metric"  # the metric a solo peak was read from
PEAK_CELL_ID = "peak_cell_id"  # the solo-peak cell a co-location cell's load was set from
PEAK_STEP = "peak_step"  # the sweep step of the solo peak a load percentage refers to
MIN_TOP_RATE = "min_top_rate"  # a solo peak's retry: the sweep's top rate at least this
LOAD_PCT = "load_pct"  # an environment offered this % of its own solo peak

# co-location scenes
SCENARIO_KIND = "scenario_kind"  # the co-location scenario's kind (weights, idle, ...)
BESIDE_TARGET = "beside_target"  # what ran beside the target (a neighbour's test case)
ENV_PLATFORM = "env_platform"  # the platform of the environment a sample came from
ENV_PARAMS = "env_params"  # that environment's own workload parameters
CLIENT_OF = "client_of"  # the environment a load generator's sample served
LOCKSTEP = "lockstep"  # the environments stepped their rates together (one schedule)
LOCKSTEP_STEP = "lockstep_step"  # the schedule step a lockstep sample belongs to
STORM_OVERLAP_S = "storm_overlap_s"  # seconds of a point that overlapped a start-up storm
POINT_S = "point_s"  # the length of a served point's window, seconds
READY_AT_S = "ready_at_s"  # when a started environment answered, seconds from the scene's start
STARTED_AT_S = "started_at_s"  # when an environment was started, seconds from the scene's start
UNDER_LOAD_S = "under_load_s"  # how long an environment ran under the target's load, seconds
SCENE_S = "scene_s"  # [start, end] of the scene, seconds
TARGET_RUN_S = "target_run_s"  # [start, end] of the target's run within the scene, seconds
WEIGHTS = "weights"  # the CPU weights of host, target and neighbour (a weights scenario)

# per-environment summaries (metrics/sampler.py)
STAT = "stat"  # the statistic of a summary sample (its mean over the window)
STDEV = "stdev"  # the spread of its 1 s readings
COV = "cov"  # their coefficient of variation
N = "n"  # how many readings it summarizes (hpcc: HPL's problem size N)
FROM = "from"  # report-made summary: where its figures came from ("series")

# web (httperf, wrk, nginx)
FILE_SIZE_KB = "file_size_kb"  # the served file's size, KB
OFFERED_RATE = "offered_rate"  # the request rate a sweep step offered, req/s
STEP = "step"  # the sweep step (0, 1, ...) a sample was measured at
PHASE = "phase"  # a web point outside the sweep: "probe" or "fixed-rate"
STOPPED = "stopped"  # why a sweep or a user ramp stopped
CLOSES = "closes"  # which side closed the connections ("server" or "client")
CLIENT_ERRORS = "client_errors"  # connections httperf could not open (no fd or port)
CLIENT_SATURATED = "client_saturated"  # the load generator, not the server, was the limit
CLIENT_CPUS_BUSY_PCT = "client_cpus_busy_pct"  # how busy the clients' CPUs were, %
CLIENTS = "clients"  # load generator processes
CLIENT_SOCKETS = "client_sockets"  # sockets each client process could open
CLIENTS_PER_CPU = "clients_per_cpu"  # load generator processes per client CPU
TIMEOUT_S = "timeout_s"  # httperf's --timeout, seconds
CALLS_PER_CONN = "calls_per_conn"  # requests per connection
CLIENT_NOFILE = "client_nofile"  # the clients' open-file limit
CLIENT_RECV_BUFFER = "client_recv_buffer"  # the clients' receive buffer
PROBE_USED = "probe_used"  # on the capacity probe that set a sweep's scale
NET_PATH = "net_path"  # the network path the client took to its server (serving/netpath.py)

# network (iperf3, sockperf)
CPU_LIMIT = "cpu_limit"  # which side's CPU limited an iperf3 run
CONNECT_ATTEMPTS = "connect_attempts"  # connection attempts before the client got through
MSG_SIZE = "msg_size"  # the message size, bytes
REVERSE = "reverse"  # the server sent (iperf3 -R)

# disk (fio)
IO_PATTERN = "io_pattern"  # "<fio rw> <bs>" of an O_DIRECT sample: its device ceiling's key
DIRECT = "direct"  # fio's O_DIRECT flag (1 = O_DIRECT)
DIRECT_IO = "direct_io"  # on an O_DIRECT sample: "honoured" or "cached:<why>" (directio.py)
DIRECT_HONOURED = "direct_honoured"  # whether the platform honoured O_DIRECT
FS_TYPE = "fs_type"  # the filesystem fio wrote to
BS = "bs"  # the block size
IODEPTH = "iodepth"  # the queue depth
IOENGINE = "ioengine"  # fio's I/O engine
SIZE_MIB = "size_mib"  # the file size, MiB

# cpu, memory, multicore
ARGS = "args"  # the extra arguments the tool ran with
BOGO_OPS = "bogo_ops"  # stress-ng's bogo operations
STRESSOR = "stressor"  # the stress-ng stressor
WORKERS = "workers"  # stress-ng's worker count
WALL_S = "wall_s"  # the run's wall-clock time, seconds
HPL_TIME_S = "hpl_time_s"  # HPL's own time, seconds
NB = "nb"  # HPL's block size
PROCESSES = "processes"  # MPI processes

# latency (probes, cyclictest)
CYCLES = "cycles"  # cyclictest's completed cycles
HISTOGRAM_OVERFLOWS = "histogram_overflows"  # cycles beyond cyclictest's histogram
RETURN_CODE = "return_code"  # cyclictest's own return code
RT_TESTS_VERSION = "rt_tests_version"  # the rt-tests version
CPU_MIGRATIONS = "cpu_migrations"  # the probe threads' CPU migrations
MAIN_MODE_US = "main_mode_us"  # the main mode of the latency distribution, us
SAMPLES = "samples"  # the probe's recorded samples
CLOCK = "clock"  # the clock the probe read
CLOCK_FALLBACK = "clock_fallback"  # why the probe fell back to another clock
PRIORITY = "priority"  # the probe's real-time priority
REALTIME = "realtime"  # the probe ran SCHED_FIFO
TSC_INVARIANT = "tsc_invariant"  # the CPU's TSC is invariant
SELF_YIELDS = "self_yields"  # threads that ran on after sched_yield
TORN_SAMPLES = "torn_samples"  # samples dropped as torn reads
RT_RUNTIME_PERIOD_US = "rt_runtime_period_us"  # the host's RT throttle, "runtime/period" us
RT_GROUP_RUNTIME_PERIOD_US = "rt_group_runtime_period_us"  # the group's RT budget, us
RT_THROTTLE_AMBIGUOUS_US = "rt_throttle_ambiguous_us"  # a maximum at or above it may be a throttle
RT_BUDGET_SPLIT = "rt_budget_split"  # how many groups the RT budget was split between
RT_BUDGET_NEIGHBOUR_PERIOD_US = "rt_budget_neighbour_period_us"  # the antagonists' RT period
QUANTUM_POLICY = "quantum_policy"  # the policy a quantum scenario ran under ("rr")
QUANTUM_EFFECTIVE = "quantum_effective"  # False: SCHED_RR in a VM is moot (vCPUs are CFS tasks)

# antagonists
ANTAGONIST = "antagonist"  # the antagonist's kind
ANTAGONISTS = "antagonists"  # how many antagonists ran
ANTAGONIST_CPUS = "antagonist_cpus"  # the CPUs each antagonist was placed on
CPUS = "cpus"  # the host CPUs a neighbour ran on
COMPETITION = "competition"  # how the antagonists competed with the target
SECONDS = "seconds"  # how long stress-ng says an antagonist ran, seconds

# java, application, conference, wasm
BENCHMARK = "benchmark"  # the JMH benchmark
FORKS = "forks"  # JMH forks
ITERATION_TIME = "iteration_time"  # JMH's iteration time
JMH_VERSION = "jmh_version"  # the JMH version
JVM_ARGS = "jvm_args"  # the JVM's arguments
MEASUREMENT_ITERATIONS = "measurement_iterations"  # JMH measurement iterations
WARMUP_ITERATIONS = "warmup_iterations"  # JMH warm-up iterations
VM_VERSION = "vm_version"  # the JVM's version
CLIENT_JVM_FLAGS = "client_jvm_flags"  # JMeter's JVM flags
DB = "db"  # the application's database
DRY_RUN_S = "dry_run_s"  # the application's dry run, seconds
MEASURED_S = "measured_s"  # the application's measured time, seconds
INTERVAL_S = "interval_s"  # the length of one JMeter interval, seconds
BOUND = "bound"  # users served is only a bound ("lower bound: never saturated")
BUDGET_BOUND = "budget_bound"  # a conference step whose server ran at its CPU budget
CPU_THROTTLED = "cpu_throttled"  # a conference step's share of throttled CFS periods
PUBLISHERS = "publishers"  # conference users who publish a stream
RUNTIME = "runtime"  # a Wasm runtime (wasmtime, or native); a container platform's engine

# written as keyword labels (Workload.sample) or only declared by a workload
# (dimension_labels / ignored_labels, kept for the runs stored with them)
APP_JARS = "app_jars"  # the application suite's jars (declared by workloads/application.py)
INTERVAL = "interval"  # the JMeter interval of the measured period a sample covers
LATE_REQUESTS = "late_requests"  # requests that ended after their interval
CLIENT_LIMIT = "client_limit"  # the client CPU busy share past which the clients were the limit
ORDER = "order"  # HPL's matrix order N
RW = "rw"  # fio's rw mode
FILE_SIZE = "file_size"  # fio's file size (declared by workloads/disk.py)
FILE_SIZE_BYTES = "file_size_bytes"  # fio's file size, bytes (declared by workloads/disk.py)
HISTOGRAM_US = "histogram_us"  # cyclictest's latency histogram: (us, count) pairs
MIN = "min"  # the smallest of a lifecycle measurement's values, ms
MAX = "max"  # the largest of them, ms
VALUES = "values"  # all of them, ms
ACCESS = "access"  # sysbench's memory access mode (seq or rnd)
ARRAY_MIB = "array_mib"  # mbw's array size, MiB
ITERATIONS = "iterations"  # mbw's copies per method
METHOD = "method"  # mbw's copy method
BLOCK_SIZE_BYTES = "block_size_bytes"  # sysbench's memory block size, bytes
OP = "op"  # sysbench's memory operation (read or write)
BLOCK_KIB = "block_kib"  # sysbench's memory block per thread, KiB
EVENTS = "events"  # sysbench's fixed event count
PROTOCOL = "protocol"  # the network protocol (declared by workloads/network.py)
MESSAGE_SIZE_BYTES = "message_size_bytes"  # the message size (declared by workloads/network.py)
RATE = "rate"  # the offered rate (declared by workloads/network.py)
DISK_GB = "disk_gb"  # the size of a created VM disk image, GB
PREALLOCATION = "preallocation"  # qemu-img's preallocation mode
CONNECTIONS = "connections"  # wrk's concurrent connections
ERROR_CLASS = "error_class"  # the class of httperf's errors a count is of
MAX_CONNECT_BURST = "max_connect_burst"  # the most connections httperf opened at once
