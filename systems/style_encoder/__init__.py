"""A style encoder pre-trained authorship-contrastively on forum posts (`harness pretrain-style`), for verifiers
that read a Hugging Face encoder (encoder_wccn, siamese_bilstm, the forum encoders) through `encoder.model`."""
