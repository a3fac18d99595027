"""The licence a published selection declares: one definition behind `capsel select --license` and the flows."""

from __future__ import annotations

import re

from capsel.errors import OptionError

# capsel cannot know the sources' licence; "other" is the Hub's id for "see the card" and claims nothing
DEFAULT_LICENSE = "other"
# the Hub's licence ids are lower case: apache-2.0, mit, cc-by-nc-sa-4.0, openrail++, other
LICENSE_PATTERN = r"^[a-z0-9][a-z0-9.+-]*$"
LICENSE_HELP = (
    "Licence the dataset card declares, as a Hugging Face licence id (apache-2.0, mit, cc-by-4.0, ...): that of the "
    "source data, which capsel cannot know; other (the default) claims none."
)


def check_license(value: str) -> str:
    """`value` when it is a licence id the dataset card can declare, else an OptionError."""
    if not re.fullmatch(LICENSE_PATTERN, value):
        raise OptionError(f"[[license]] must be a Hugging Face licence id in lower case such as apache-2.0, mit or "
                          f"{DEFAULT_LICENSE}, not {value!r}")
    return value
