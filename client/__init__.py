"""The referee Python SDK and wire schema. Light: imports only pydantic and httpx.

from referee.client import RefereeClient
"""

from referee.client.errors import (
    APIError,
    InternalServerError,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    RefereeError,
    RequestTimeout,
    ServiceUnavailable,
    TransportError,
    Unauthorized,
)
from referee.client.models import (
    FormatGrader,
    GroupStats,
    MathGrader,
    MathVerifyRequest,
    MathVerifyResponse,
    MultipleChoiceGrader,
    RewardItem,
    RewardResult,
    RewardsRequest,
    RewardsResponse,
    StringCheckGrader,
    WeightedGrader,
    WeightedPart,
)
from referee.client.sdk import AsyncRefereeClient, RefereeClient

__all__ = [
    "APIError",
    "AsyncRefereeClient",
    "FormatGrader",
    "GroupStats",
    "InternalServerError",
    "InvalidRequest",
    "MathGrader",
    "MathVerifyRequest",
    "MathVerifyResponse",
    "MultipleChoiceGrader",
    "NotFound",
    "PayloadTooLarge",
    "RefereeClient",
    "RefereeError",
    "RequestTimeout",
    "RewardItem",
    "RewardResult",
    "RewardsRequest",
    "RewardsResponse",
    "ServiceUnavailable",
    "StringCheckGrader",
    "TransportError",
    "Unauthorized",
    "WeightedGrader",
    "WeightedPart",
]
