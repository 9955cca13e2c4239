"""CLEVR-POC in the Hugging Face ``datasets`` format: write an export (:mod:`.hf_writer`), describe its
columns (:mod:`.hf_columns`), write its dataset card (:mod:`.hf_card`) and read it back as typed examples
(:mod:`.hf_reader`; used by :func:`clevr_poc.dataset_reader.load_dataset`). See ``docs/export.md``."""
