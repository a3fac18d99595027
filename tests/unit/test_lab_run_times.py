"""A lab run's wall time is kept as it goes, so a run killed after some pools still counts their time."""

import json
import time

from capsel_lab.real_sft.experiment import RunTimes


def test_a_killed_run_keeps_its_time_up_to_its_last_pool_and_a_resumed_one_adds_its_own(tmp_path):
    path = tmp_path / "wall_s.json"
    killed = RunTimes(path)
    time.sleep(0.2)
    killed.update()  # one pool finished, then the process dies without a final update
    first = json.loads(path.read_text())
    assert len(first) == 1 and 0.2 <= first[0] < 5
    resumed = RunTimes(path)
    assert json.loads(path.read_text()) == [first[0], 0.0]  # on disk from the start of the resumed run
    time.sleep(0.1)
    walls = resumed.update()
    assert walls[0] == first[0] and 0.1 <= walls[1] < 5 and json.loads(path.read_text()) == walls
