"""The library never imports Prefect, Ray or the lab: importing every capsel module leaves them out of sys.modules.

capsel.flows and capsel.tasks are the Prefect layer (flows/ and tasks/ in the repository), so they are not walked.
"""

import subprocess
import sys

SCRIPT = """
import importlib, pkgutil, sys
import capsel
orchestration = ('capsel.flows', 'capsel.tasks')
names = [m.name for m in pkgutil.walk_packages(capsel.__path__, 'capsel.') if not m.name.startswith(orchestration)]
for name in names:
    importlib.import_module(name)
outside = ('prefect', 'prefect_ray', 'ray', 'capsel_lab')
print(len(names), sorted(m for m in sys.modules if m.split('.')[0] in outside or m.startswith(orchestration)))
"""


def test_importing_every_capsel_module_leaves_prefect_and_the_lab_out():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    count, leaked = done.stdout.strip().split(" ", 1)
    assert int(count) > 60 and leaked == "[]"
