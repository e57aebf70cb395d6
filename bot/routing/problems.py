"""What the routing model reports instead of raising."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RoutingProblem:
    """One problem at ``file:line:column`` (1-based; 0 when it has no position in the file).

    ``fatal`` problems are input the model refuses to read (the generator would refuse it too, or
    reading it could change its meaning): the steps it holds are missing from the routes. The
    others are routed input that breaks a rule or an invariant of the pipeline.
    """

    file: str
    line: int
    column: int
    message: str
    fatal: bool = False

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"
