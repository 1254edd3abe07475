"""The bottom layer both the framework (harness/) and the system toolkit (toolkit/) stand on: errors, records,
file helpers (atomic writes, the one atomic folder writer `staged_folder`/`swap_folder`, checksums), progress.
It imports no other package of the project."""
