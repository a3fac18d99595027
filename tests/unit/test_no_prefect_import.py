"""The library never imports Prefect (or Ray): importing every capsel module leaves them out of sys.modules."""

import subprocess
import sys

SCRIPT = """
import importlib, pkgutil, sys
import capsel
names = [m.name for m in pkgutil.walk_packages(capsel.__path__, 'capsel.')]
for name in names:
    importlib.import_module(name)
print(len(names), sorted(m for m in sys.modules if m.split('.')[0] in ('prefect', 'prefect_ray', 'ray', 'flows', 'tasks')))
"""


def test_importing_every_capsel_module_leaves_prefect_out():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    count, leaked = done.stdout.strip().split(" ", 1)
    assert int(count) > 60 and leaked == "[]"
