"""PAN authorship verification: the pan23 (PAN 2020-2023) and pan-classic (PAN 2013-2015) tasks, their
readers, the classic -> jsonl converter, PAN's official evaluator, TIRA answering and recording."""
