"""What one HumanEval program may use: generous for a test, small enough that a runaway cannot take the host down."""

TIMEOUT_S = 10.0  # wall time, after which the whole sandbox is killed
MEMORY_LIMIT = 2 << 30  # address space per process (RLIMIT_AS), and the sandbox's total where a memory cgroup exists
FILE_SIZE_LIMIT = 16 << 20  # largest file a process may write (RLIMIT_FSIZE)
PROCESS_LIMIT = 32  # processes of the sandbox (RLIMIT_NPROC of its own user; a pids cgroup beside it as root)
TMP_SIZE = 64 << 20  # the program's /tmp, a tmpfs of its own (its pages count toward the memory cgroup too)
CPU_CORES = 1  # the sandbox's CPU bandwidth where a cpu cgroup exists: at most the wall time, on one core
WORK = "/tmp/program"  # the program's own folder inside the sandbox, on its fresh /tmp
# An unprivileged uid per program when capsel runs as root: RLIMIT_NPROC then counts that program's processes and
# nothing else, and no account is added to the host. Far above the ranges useradd, systemd and subuid files use.
SANDBOX_UID_BASE = 0x7E000000
SANDBOX_UID_SPAN = 1 << 24
