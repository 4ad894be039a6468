"""The warnings of plcore-cenda (public: users filter them by class)."""

__all__ = ["CendaConditioningWarning"]


class CendaConditioningWarning(UserWarning):
    """``B = mu X^T X + (1 - mu) I`` is singular or nearly so and was regularised."""
