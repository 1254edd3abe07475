"""PAN authorship verification: the pan23, pan20 (PAN 2020-2023 jsonl) and pan-classic (PAN 2013-2015 folders)
tasks, one module each; their readers (jsonl, folders), shared evaluation (common), the classic -> jsonl
converter, PAN's official evaluator, TIRA answering and recording."""
