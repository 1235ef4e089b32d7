"""``jaxport generate DIR --prompt TEXT | --prompt-ids 1,2,3``: generate tokens with a generative
bundle, printing them as they come."""

from __future__ import annotations

import argparse
from typing import Any

from jaxport.application.cli.common import UsageError


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``generate`` to ``commands``."""
    cmd = commands.add_parser(
        "generate", parents=[common], help="generate tokens with a generative bundle",
        description="Generate tokens after a prompt with the generative bundle at DIR (saved with "
                    "save_bundle(..., generation=GenerationSpec(...))), printing each as it comes: "
                    "text with --prompt (the bundle carries a tokenizer), token ids with --prompt-ids.")
    cmd.add_argument("path", metavar="DIR", help="a generative bundle directory")
    given = cmd.add_mutually_exclusive_group(required=True)
    given.add_argument("--prompt", metavar="TEXT", help="the prompt as text (needs a bundled tokenizer)")
    given.add_argument("--prompt-ids", metavar="IDS", help="the prompt as token ids, e.g. 1,2,3")
    cmd.add_argument("--max-new-tokens", type=int, default=16, metavar="N", help="the most tokens to generate")
    cmd.add_argument("--temperature", type=float, default=0.0, metavar="T", help="0 (the default) is greedy")
    cmd.add_argument("--top-k", type=int, default=None, metavar="K", help="draw among the K likeliest tokens")
    cmd.add_argument("--top-p", type=float, default=1.0, metavar="P",
                     help="draw among the likeliest tokens whose probabilities reach P")
    cmd.add_argument("--seed", type=int, default=None, metavar="S", help="the seed of the draws")
    cmd.add_argument("--stop", action="append", type=int, default=[], metavar="ID",
                     help="a token id that ends the text, besides the model's end of text (repeat)")
    cmd.set_defaults(handler=generate_tokens)


def generate_tokens(args: argparse.Namespace) -> int:
    """Prints the text (or the ids, space-separated) as each token comes, then a newline."""
    from jaxport.application.generation.api import load_generator

    prompt: str | list[int] = args.prompt if args.prompt is not None else _ids(args.prompt_ids)
    generator = load_generator(args.path)
    for token in generator.stream(prompt, args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
                                  top_p=args.top_p, seed=args.seed, stop=args.stop):
        print(token.text if token.text is not None else f"{token.id} ", end="", flush=True)
    print()
    return 0


def _ids(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--prompt-ids {text!r} is not a comma-separated list of token ids") from None
