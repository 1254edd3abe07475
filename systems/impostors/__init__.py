"""The General Impostors method of authorship verification (Koppel & Winter 2014; Seidman 2013)."""

from systems.impostors.system import GeneralImpostors, impostor_score

__all__ = ["GeneralImpostors", "impostor_score"]
