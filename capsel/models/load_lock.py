"""One model load at a time in a process."""

from __future__ import annotations

import threading

# transformers' from_pretrained switches process-wide state (the default device, for meta-device
# init) while it builds a model. Two threads loading at once (sharded scoring on local threads) can
# leave it switched: every later load in the process then ends with weights on the meta device.
MODEL_LOAD_LOCK = threading.RLock()
