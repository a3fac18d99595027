"""Publishing a selection: versioned directory, data files, manifest, card and report."""

from capsel.publish.publish import PublishedSelection, publish_selection

__all__ = ["PublishedSelection", "publish_selection"]
