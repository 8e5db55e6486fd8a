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
    TooManyRequests,
    TransportError,
    Unauthorized,
)
from referee.client.models import (
    CodeGrader,
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
    SandboxLanguages,
    SandboxRunResponse,
    StringCheckGrader,
    WeightedGrader,
    WeightedPart,
)
from referee.client.sdk import AsyncRefereeClient, RefereeClient

__all__ = [
    "APIError",
    "AsyncRefereeClient",
    "CodeGrader",
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
    "SandboxLanguages",
    "SandboxRunResponse",
    "ServiceUnavailable",
    "StringCheckGrader",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "WeightedGrader",
    "WeightedPart",
]
