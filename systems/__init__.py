"""Systems, each registered in harness.registry.SYSTEMS: a package systems/<name>/ when it has more than one
module, a single module systems/<name>.py otherwise (baselines/ groups the small baselines, one module each).
Systems import core, harness, toolkit and a task family's records (`tasks.<family>.records`); no system imports
another system."""
