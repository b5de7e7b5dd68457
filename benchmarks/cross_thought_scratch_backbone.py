"""A small BERT-shaped backbone folder for Cross-Thought and MLM pre-trained from scratch.

Cross-Thought Table 2 compares encoders trained from random weights. Our default backbone
(all-MiniLM-L6-v2) was trained on SQuAD, NLI and Quora pairs, so the from-scratch runs take
this folder instead: a WordPiece vocabulary learned on the corpus (the MLM softmax over
MiniLM's 30,522 words dominates a small model's step on a CPU) and a ``config.json`` of the
given shape. No weights: ``ctxsent pretrain cross-thought --backbone FOLDER --init random``.

    python benchmarks/cross_thought_scratch_backbone.py --corpus runs/corpus-wiki \\
        --out runs/ct-scratch/backbone --vocab-size 8000 --layers 2 --width 128 --heads 2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from transformers import BertConfig

from ctxsent.corpus.tokenizer_training import train_wordpiece


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True, help="a 'ctxsent corpus build' folder")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--max-documents", type=int, default=2000)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--heads", type=int, default=2)
    args = parser.parse_args()
    tokenizer = train_wordpiece(args.corpus, args.out, args.vocab_size, args.max_documents)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=args.width,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=4 * args.width,
        pad_token_id=tokenizer.pad_token_id,
    )
    config.save_pretrained(args.out)
    print(json.dumps({"out": str(args.out), "vocab": len(tokenizer), **config.to_diff_dict()}))


if __name__ == "__main__":
    main()
