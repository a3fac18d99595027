"""The one runner of every scoring job: pending pages cut into work, dispatched inline or to workers, one writer."""
