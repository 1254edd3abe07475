"""The BERT-BiLSTM Siamese ensemble (Petropoulos, PAN 2023): `systems.siamese_bilstm.system:SiameseBiLSTM`.

Kept empty of imports: the harness imports the system module only when the system is used, so
listing systems never loads torch or transformers.
"""
