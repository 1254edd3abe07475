"""Account-linking systems of Khan et al. (NAACL 2021) for the `reddit` task.

System names (registry): `varlen_linker` (VarlenLinker), `iur_fixed` (IurFixed), `varlen_avg`
(VarlenAvg); their TF-IDF baseline `reddit_tfidf` lives in systems.baselines. torch is imported by
the modules that need it, not here.
"""
