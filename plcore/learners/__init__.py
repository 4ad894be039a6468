"""Built-in learners (registered like any third-party plugin)."""

from plcore.learners.plknn import PlKnnLearner

__all__ = ["PlKnnLearner"]
