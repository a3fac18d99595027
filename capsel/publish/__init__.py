"""Publishing a selection: versioned directory, data files, manifest, card and report (capsel.publish.publish).

Nothing is imported here: the light parts (destinations, the funnel) are named by commands before any
selection is read, and must not load pandas or matplotlib with them.
"""
