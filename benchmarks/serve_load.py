"""Load test of ``ctxsent serve`` on loopback: throughput and p50/p99 latency.

Starts two servers (the real ``serve`` command, uvicorn) in subprocesses, one
with micro-batching and one without (``--max-batch 1``: every request is its
own model call). At each concurrency level, for each server in turn, that many
concurrent clients send ``POST /rank`` requests (a question and the sample
lighthouse document, split into sentences by the server) for at most
``--seconds`` or ``--max-requests``; requests in flight at the deadline still
finish. Prints one JSON object.

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/serve_load.py --model tiny
    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/serve_load.py --model minilm

``--model`` is ``tiny`` (a random 2-layer width-32 BERT cross-encoder), ``minilm``
(a cross-encoder on all-MiniLM-L6-v2 with a fresh head: speed only) or a saved
ctxsent model folder.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

EXAMPLES = Path(__file__).resolve().parents[1] / "src" / "ctxsent" / "examples"
SERVE = "import typer; from ctxsent.serving.cli import serve; typer.run(serve)"


def build_model(spec: str, folder: Path) -> str:
    """A saved model folder for ``tiny`` / ``minilm``, or ``spec`` itself."""
    if spec not in ("tiny", "minilm"):
        return spec
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from ctxsent.models.backbones import resolve_backbone
    from ctxsent.models.cross_encoder import CrossEncoderRanker
    from ctxsent.models.transformer_ranker import RankerConfig

    torch.manual_seed(0)
    if spec == "minilm":
        return str(CrossEncoderRanker.from_backbone("minilm").save_pretrained(folder))
    config = BertConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
        num_labels=1,
    )
    tokenizer = AutoTokenizer.from_pretrained(resolve_backbone("minilm"))
    ranker = CrossEncoderRanker(
        BertForSequenceClassification(config), tokenizer, RankerConfig("tiny", False, 256)
    )
    return str(ranker.save_pretrained(folder))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(model: str, port: int, batched: bool) -> subprocess.Popen:
    options = ["--max-batch", "256", "--max-wait-ms", "5"] if batched else ["--max-batch", "1"]
    command = [
        sys.executable,
        "-c",
        SERVE,
        model,
        "--port",
        str(port),
        "--log-level",
        os.environ.get("SERVE_LOG", "warning"),
    ]
    server = subprocess.Popen(command + options)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"server exited with {server.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.5)
    server.kill()
    raise SystemExit("server did not start in 180 s")


async def load_level(
    url: str, payloads: list[dict], concurrency: int, seconds: float, max_requests: int
) -> dict:
    """Closed-loop load: ``concurrency`` clients each send a request as soon as the last returns."""
    latencies: list[float] = []
    errors = 0
    sent = 0
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as http:
        before = (await http.get("/health")).json()["batching"]
        deadline = time.monotonic() + seconds

        async def client() -> None:
            nonlocal errors, sent
            while time.monotonic() < deadline and sent < max_requests:
                payload = payloads[sent % len(payloads)]
                sent += 1
                start = time.perf_counter()
                try:
                    response = await http.post("/rank", json=payload)
                    errors += response.status_code != 200
                except httpx.TransportError:  # counted, never retried
                    errors += 1
                latencies.append(time.perf_counter() - start)

        start = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
        after = (await http.get("/health")).json()["batching"]
    calls = after["calls"] - before["calls"]
    served = after["items"] - before["items"]
    ms = np.array(latencies) * 1000
    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "errors": errors,
        "seconds": round(elapsed, 2),
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "candidates_per_s": round(served / elapsed, 1),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p99_ms": round(float(np.percentile(ms, 99)), 1),
        "model_calls": calls,
        "requests_per_call": round((after["requests"] - before["requests"]) / max(1, calls), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="tiny", help="tiny | minilm | a saved model folder")
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--seconds", type=float, default=8.0, help="per level (bound)")
    parser.add_argument("--max-requests", type=int, default=2000, help="per level (bound)")
    parser.add_argument("--modes", default="batched,unbatched")
    args = parser.parse_args()

    document = (EXAMPLES / "lighthouse.txt").read_text()
    questions = [q for q in (EXAMPLES / "questions.txt").read_text().splitlines() if q.strip()]
    payloads = [{"question": q, "document": document, "top_k": 3} for q in questions]
    levels = [int(c) for c in args.concurrency.split(",")]
    report = {
        "model": args.model,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "server_threads": os.environ.get("OMP_NUM_THREADS", "default"),
        "requests": "POST /rank: a question + the 206-word lighthouse document, top_k 3",
        "runs": [],
    }
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory() as scratch:
        model = build_model(args.model, Path(scratch) / "model")
        ports = {mode: free_port() for mode in modes}
        servers = {mode: start_server(model, ports[mode], mode == "batched") for mode in modes}
        try:
            url = f"http://127.0.0.1:{ports[modes[0]]}"
            answers = httpx.post(f"{url}/rank", json={**payloads[0], "top_k": None}, timeout=120)
            report["candidates_per_request"] = len(answers.json()["answers"])
            for level in levels:  # modes interleaved per level: machine noise hits both alike
                for mode in modes:
                    url = f"http://127.0.0.1:{ports[mode]}"
                    result = asyncio.run(
                        load_level(url, payloads, level, args.seconds, args.max_requests)
                    )
                    report["runs"].append({"mode": mode, **result})
                    print(json.dumps(report["runs"][-1]), file=sys.stderr)
        finally:
            for server in servers.values():
                server.terminate()
                server.wait(timeout=30)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
