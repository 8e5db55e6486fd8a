"""Prometheus metrics of one app instance (its own registry: no import-time globals)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["Metrics"]


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.requests = Counter(
            "referee_http_requests",
            "HTTP requests by route and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "referee_http_request_seconds",
            "HTTP request latency by route",
            ["route"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        )
        self.items = Counter(
            "referee_reward_items",
            "Scored items by grader type and outcome",
            ["grader", "outcome"],
            registry=self.registry,
        )
        self.check_timeouts = Counter(
            "referee_check_timeouts",
            "Checks killed at their deadline",
            registry=self.registry,
        )
