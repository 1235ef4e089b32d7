"""Hugging Face's tokenizers library: a bundled ``tokenizer.json`` read and run."""
