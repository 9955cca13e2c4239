"""Environments: the 11 constraint templates, the Environment value object, and the sampler."""

from clevr_poc.environments.checks import is_satisfiable
from clevr_poc.environments.environment import Environment
from clevr_poc.environments.sampler import sample_environment, sample_environments
from clevr_poc.environments.templates import TEMPLATES, TEMPLATES_BY_NAME, Constraint, ConstraintTemplate

__all__ = ["Environment", "Constraint", "ConstraintTemplate", "TEMPLATES", "TEMPLATES_BY_NAME",
           "is_satisfiable", "sample_environment", "sample_environments"]
