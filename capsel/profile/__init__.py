"""The paper's rank survey: stable rank of weights and hidden states over decoder depth."""

from capsel.profile.check import check_model
from capsel.profile.survey import LayerRank, RankProfile, rank_profile
from capsel.profile.verdict import Verdict, has_u_shape

__all__ = ["LayerRank", "RankProfile", "Verdict", "check_model", "has_u_shape", "rank_profile"]
