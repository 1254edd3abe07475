"""Every measure the harness computes, with one table (harness.metrics.table) naming them all.

Modules: `verification` (PAN's measures), `ranking` (retrieval, from first-match ranks), `linking`
(EER, minDCF, DET), `table` (name -> function, direction, description, parameters). Importing this
package imports no numpy; the measure modules do.
"""

from harness.metrics.table import MEASURES, Measure, direction, higher_is_better, is_known, measure_function, resolve

__all__ = ["MEASURES", "Measure", "direction", "higher_is_better", "is_known", "measure_function", "resolve"]
