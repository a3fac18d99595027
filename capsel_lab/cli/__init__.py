"""`capsel lab ...`: the validation lab's commands (registered by the capsel CLI on demand)."""
