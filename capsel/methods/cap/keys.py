"""The keys CAP's rows are stored under, all read from its scoring config: CAP's scorer, y-hat alone and any
stand-in that writes CAP's rows share them, so the three can never key the same rows differently."""

from __future__ import annotations

from capsel.cap_engine.config import ScoringConfig
from capsel.scorers.base import ConfigRow


class CapKeys:
    """Mixed into a scorer whose `config` is a resolved ScoringConfig and whose rows are CAP's."""

    config: ScoringConfig

    @property
    def method(self) -> str:
        """CAP's rows are its divergences (and y-hat under the generation config)."""
        return "cap"

    @property
    def config_hash(self) -> str:
        """The scoring config's hash (keys `divergences`)."""
        return self.config.scoring_hash

    @property
    def generation_hash(self) -> str:
        """The generation config's hash (keys `generations`)."""
        return self.config.generation_hash

    @property
    def prompt_format(self) -> str:
        """The resolved prompt format (raw or chat)."""
        return self.config.prompt_format

    def config_rows(self) -> list[ConfigRow]:
        """The generation config, then the scoring config that names it: as `scoring_configs` keeps them."""
        return [ConfigRow(self.config.generation_hash, self.config.generation_config()),
                ConfigRow(self.config.scoring_hash, self.config.scoring_config(), self.config.generation_hash)]
