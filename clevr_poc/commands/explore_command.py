"""``python -m clevr_poc explore``: a local web page (Gradio) to look at answers and their reasons.

::

    python -m clevr_poc explore --dataset DIR [--predictions RESULTS/predictions.json] [--port 7860]
    python -m clevr_poc explore                      # the upload tab only

Serves on 127.0.0.1 only (``--host`` to change), offline, with the shipped models (``models/``). Every
setting (dataset folder, predictions file, models folder, port) is checked before the server starts.
Needs the ``[explore]`` extra (gradio) and, for perception and the BiLSTM parser, ``[vision]``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from clevr_poc.commands.shared import Subparsers, add_command, int_at_least

#: Largest upload the page accepts (gradio refuses bigger files before they reach the library).
MAX_UPLOAD = "16mb"

_EPILOG = """examples:
  python -m clevr_poc explore --dataset clevr-poc-demo/dataset
  python -m clevr_poc evaluate --dataset DIR --split test --model ns-vqa --scene perception --query bilstm --out res
  python -m clevr_poc explore --dataset DIR --predictions res/predictions.json     # wrong answers first
"""


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Register the ``explore`` sub-command (sets ``func=run``)."""
    parser = add_command(
        subparsers,
        "explore",
        help="a local web page: pick an example or upload one, see the answer and its reasons",
        description="A local web explorer (Gradio, 127.0.0.1, offline): the image with the perceived objects, the\n"
                    "constraints, the parsed query, the answer set, the gold answer and the explanation.",
        epilog=_EPILOG,
    )
    parser.add_argument("--dataset", metavar="DIR", help="dataset folder (ours, the official release or an export)")
    parser.add_argument("--predictions", metavar="FILE.json",
                        help="an evaluation's predictions.json: outcomes per example, wrong answers first")
    parser.add_argument("--models", metavar="DIR", help="models folder (default: the shipped models, $CLEVR_POC_MODELS when set)")
    parser.add_argument("--device", default="cpu", metavar="D", help="torch device of perception (default cpu)")
    parser.add_argument("--llm-backend", default="local", metavar="SPEC",
                        help="chat backend of the llm query source (default local: the bundled SmolLM2)")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int_at_least(1), default=7860, help="port (default 7860)")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    import importlib.util

    from clevr_poc.commands.shared import require_dataset_folder
    from clevr_poc.errors import ClevrPocError, FormatError

    if args.port > 65535:
        raise FormatError("must be 1..65535", field="--port", value=args.port)
    if args.predictions is not None and args.dataset is None:
        raise FormatError("needs --dataset", field="--predictions")
    if importlib.util.find_spec("gradio") is None:
        raise ClevrPocError("explore needs gradio (not installed): install the [explore] extra "
                            "(pip install '.[explore]' in the clevr_poc folder)")
    from clevr_poc.explorer.case_runner import Models
    from clevr_poc.explorer.catalog import Catalog

    catalog = None
    if args.dataset is not None:
        require_dataset_folder(args.dataset)
        catalog = Catalog(args.dataset, args.predictions)
    if args.models is not None and not os.path.isdir(args.models):
        raise FormatError("models folder not found", source=args.models, field="--models")
    if importlib.util.find_spec("torch") is not None:  # without torch the page says which extra to install
        from clevr_poc.perception.devices import resolve_device

        resolve_device(args.device)
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # offline: no usage reports
    from clevr_poc.explorer.app import build_app

    app = build_app(catalog, Models(args.models, device=args.device, llm_backend=args.llm_backend))
    print(f"explorer: http://{args.host}:{args.port}/ (Ctrl-C to stop)", flush=True)
    # uploads are untrusted: at most MAX_UPLOAD per file (an official 320x320 PNG is ~0.1 MB, an .lp file ~10 KB)
    app.launch(server_name=args.host, server_port=args.port, share=False, inbrowser=False, show_error=True,
               quiet=True, max_file_size=MAX_UPLOAD)
    return 0
