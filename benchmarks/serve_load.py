"""Load test of ``ctxsent serve`` on loopback: throughput, p50/p99 latency, and the
latency of small requests while a large one runs.

Section ``load``: starts two servers (the real ``serve`` command, uvicorn) in
subprocesses, one with micro-batching and one without (``--max-batch`` = the
candidates of one request: every request is its own model call). At each
concurrency level, for each server in turn, that many concurrent clients send
``POST /rank`` requests (a question and the sample lighthouse document, split
into sentences by the server) for at most ``--seconds`` or ``--max-requests``;
requests in flight at the deadline still finish.

Section ``fairness``: one client sends small requests (as above) one after the
other, first on an idle server, then while another client sends large requests
(``--large-candidates`` candidates of ``--large-chars`` characters) one after the
other. The ratio of the small requests' p99 latency under the large ones to
their idle p99 is the figure of merit (target: at most 2). Two servers, taking
turns: ``split`` (``serve``'s defaults but ``--chunk-chars``: large requests are
cut into chunks that take turns with the small ones) and ``whole`` (no limit
on a model call: a large request is one call, as before chunking).

Section ``disconnect`` (``split`` server): the server's CPU time for a request of one
chunk (``--chunk-chars`` of ``--large-chars`` candidates), then a client sends the large
request and disconnects ``--disconnect-after-s`` later; the CPU the server spends from
then until it is idle should be at most about one chunk's (the rest is dropped).

Prints one JSON object.

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/serve_load.py --model tiny
    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/serve_load.py --model minilm
    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/serve_load.py \
        --sections fairness --large-chars 5000 --chunk-chars 5000
    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 nice .venv/bin/python benchmarks/serve_load.py \
        --model minilm-cascade --sections fairness,disconnect --samples 100

``--model`` is ``tiny`` (a random 2-layer width-32 BERT cross-encoder), ``minilm``
(a cross-encoder on all-MiniLM-L6-v2 with a fresh head: speed only), ``minilm-bi`` (the
MiniLM bi-encoder), ``minilm-cascade`` (a cascade on MiniLM with untrained exits: speed
only) or a saved ctxsent model folder.
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

from ctxsent.text import split_sentences

EXAMPLES = Path(__file__).resolve().parents[1] / "src" / "ctxsent" / "examples"
SERVE = "import typer; from ctxsent.cli.serve import serve; typer.run(serve)"


def build_model(spec: str, folder: Path) -> str:
    """A saved model folder for ``tiny`` / ``minilm``, or ``spec`` itself."""
    if spec not in ("tiny", "minilm", "minilm-bi", "minilm-cascade"):
        return spec
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from ctxsent.models.backbones import resolve_backbone
    from ctxsent.models.cross_encoder import CrossEncoderRanker
    from ctxsent.models.transformer_ranker import RankerConfig

    torch.manual_seed(0)
    if spec == "minilm":
        return str(CrossEncoderRanker.from_backbone("minilm").save_pretrained(folder))
    if spec == "minilm-bi":
        return "bi-encoder"  # the MiniLM bi-encoder, as ctxsent.load names it
    if spec == "minilm-cascade":  # untrained exits: latency does not depend on training
        from ctxsent.models.cascade import CascadeRanker

        return str(CascadeRanker.from_backbone("minilm").save_pretrained(folder))
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


def start_server(model: str, port: int, options: list[str]) -> subprocess.Popen:
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


async def fairness_run(
    url: str, small: list[dict], large: dict, samples: int, seconds: float
) -> dict:
    """Small requests one after the other, on the idle server, then while large requests run."""
    errors = 0
    async with httpx.AsyncClient(base_url=url, timeout=600) as http:

        async def small_latencies(count: int, during: asyncio.Task | None = None) -> list[float]:
            """Latencies of up to ``count`` requests, each sent while ``during`` still runs."""
            nonlocal errors
            latencies: list[float] = []
            while len(latencies) < count and not (during and during.done()):
                start = time.perf_counter()
                response = await http.post("/rank", json=small[len(latencies) % len(small)])
                errors += response.status_code != 200
                latencies.append(time.perf_counter() - start)
            return latencies

        idle = await small_latencies(samples)
        loaded: list[float] = []
        large_seconds: list[float] = []
        deadline = time.monotonic() + seconds
        while len(loaded) < samples and time.monotonic() < deadline:
            start = time.perf_counter()
            running = asyncio.create_task(http.post("/rank", json=large))
            loaded += await small_latencies(samples - len(loaded), during=running)
            errors += (await running).status_code != 200
            large_seconds.append(time.perf_counter() - start)
    idle_ms, loaded_ms = np.array(idle) * 1000, np.array(loaded) * 1000
    idle_p99 = float(np.percentile(idle_ms, 99))
    loaded_p99 = float(np.percentile(loaded_ms, 99)) if loaded else float("nan")
    return {
        "idle_p50_ms": round(float(np.percentile(idle_ms, 50)), 1),
        "idle_p99_ms": round(idle_p99, 1),
        "loaded_p50_ms": round(float(np.percentile(loaded_ms, 50)), 1) if loaded else None,
        "loaded_p99_ms": round(loaded_p99, 1),
        "loaded_max_ms": round(float(np.max(loaded_ms)), 1) if loaded else None,
        "p99_ratio": round(loaded_p99 / idle_p99, 2),
        "small_requests": len(idle) + len(loaded),
        "large_requests": len(large_seconds),
        "large_request_s": round(float(np.mean(large_seconds)), 2),
        "errors": errors,
    }


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) the process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_until_idle(pid: int, quiet_s: float = 1.0, bound_s: float = 300.0) -> float:
    """CPU seconds ``pid`` uses from now until it uses none for ``quiet_s``."""
    start = last = cpu_seconds(pid)
    quiet_since, deadline = time.monotonic(), time.monotonic() + bound_s
    while time.monotonic() - quiet_since < quiet_s and time.monotonic() < deadline:
        time.sleep(0.05)
        now = cpu_seconds(pid)
        if now - last > 0.02:  # more than the event loop's idle ticks
            quiet_since = time.monotonic()
        last = now
    return last - start


async def disconnect_run(url: str, pid: int, large: dict, chunk: dict, after_s: float) -> dict:
    """CPU the server spends on one chunk's request, and after a client sends the large
    request and disconnects ``after_s`` seconds later (its work left should be dropped at
    the next chunk boundary)."""
    async with httpx.AsyncClient(base_url=url, timeout=600) as http:
        await http.post("/rank", json=chunk)  # warm
        before = cpu_seconds(pid)
        for _ in range(5):
            assert (await http.post("/rank", json=chunk)).status_code == 200
        one_chunk = (cpu_seconds(pid) - before) / 5
    cpu_until_idle(pid)
    client = httpx.AsyncClient(base_url=url, timeout=600)
    sent = asyncio.create_task(client.post("/rank", json=large))
    await asyncio.sleep(after_s)
    sent.cancel()
    await asyncio.gather(sent, return_exceptions=True)
    await client.aclose()  # the connection closes: the server sees the client leave
    after = await asyncio.to_thread(cpu_until_idle, pid)
    return {
        "one_chunk_request_cpu_s": round(one_chunk, 3),
        "disconnect_after_s": after_s,
        "cpu_after_disconnect_s": round(after, 3),
        "ratio_to_one_chunk": round(after / max(one_chunk, 1e-9), 2),
    }


def large_payload(question: str, document: str, count: int, chars: int) -> dict:
    """``count`` distinct candidates of ``chars`` characters cut from the repeated document."""
    text = document.replace("\n", " ") * (chars // len(document) + 2)
    return {
        "question": question,
        "candidates": [text[i % len(document) :][:chars] for i in range(count)],
        "top_k": 3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model", default="tiny", help="tiny | minilm | minilm-bi | minilm-cascade | a folder"
    )
    parser.add_argument("--sections", default="load,fairness")
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--seconds", type=float, default=8.0, help="per level (bound)")
    parser.add_argument("--max-requests", type=int, default=2000, help="per level (bound)")
    parser.add_argument("--modes", default="batched,unbatched")
    parser.add_argument("--large-candidates", type=int, default=1000)
    parser.add_argument("--large-chars", type=int, default=5000)
    parser.add_argument("--chunk-chars", type=int, default=10_000, help="of the split server")
    parser.add_argument("--samples", type=int, default=200, help="small requests, idle and loaded")
    parser.add_argument("--fairness-seconds", type=float, default=120.0, help="bound")
    parser.add_argument("--disconnect-after-s", type=float, default=3.0)
    args = parser.parse_args()

    document = (EXAMPLES / "lighthouse.txt").read_text()
    questions = [q for q in (EXAMPLES / "questions.txt").read_text().splitlines() if q.strip()]
    payloads = [{"question": q, "document": document, "top_k": 3} for q in questions]
    levels = [int(c) for c in args.concurrency.split(",")]
    sections = args.sections.split(",")
    per_request = len(split_sentences(document))
    report = {
        "model": args.model,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "server_threads": os.environ.get("OMP_NUM_THREADS", "default"),
        "requests": "POST /rank: a question + the 206-word lighthouse document, top_k 3",
        "candidates_per_request": per_request,
    }
    limits = [
        *("--max-candidates", str(max(1000, args.large_candidates))),
        *("--max-chars", str(max(5000, args.large_chars))),
    ]
    options = {
        "batched": ["--max-batch", "256", "--max-wait-ms", "5"],
        "unbatched": ["--max-batch", str(per_request)],
        "split": [*limits, "--chunk-chars", str(args.chunk_chars)],
        "whole": [*limits, "--max-batch", "1000000", "--chunk-chars", "1000000000"],
    }
    modes = (args.modes.split(",") if "load" in sections else []) + (
        ["split", "whole"] if "fairness" in sections else []
    )
    if "disconnect" in sections and "split" not in modes:
        modes.append("split")
    with tempfile.TemporaryDirectory() as scratch:
        model = build_model(args.model, Path(scratch) / "model")
        ports = {mode: free_port() for mode in modes}
        servers = {mode: start_server(model, ports[mode], options[mode]) for mode in modes}
        urls = {mode: f"http://127.0.0.1:{port}" for mode, port in ports.items()}
        try:
            if "load" in sections:
                report["runs"] = []
                for level in levels:  # modes interleaved per level: machine noise hits both
                    for mode in args.modes.split(","):
                        result = asyncio.run(
                            load_level(urls[mode], payloads, level, args.seconds, args.max_requests)
                        )
                        report["runs"].append({"mode": mode, **result})
                        print(json.dumps(report["runs"][-1]), file=sys.stderr)
            if "fairness" in sections:
                large = large_payload(
                    questions[0], document, args.large_candidates, args.large_chars
                )
                report["fairness"] = {
                    "large_request": f"{args.large_candidates} candidates of "
                    f"{args.large_chars} characters, top_k 3",
                    "servers": [],
                }
                for mode in ("split", "whole"):
                    result = asyncio.run(
                        fairness_run(
                            urls[mode], payloads, large, args.samples, args.fairness_seconds
                        )
                    )
                    settings = " ".join(options[mode][4:])
                    report["fairness"]["servers"].append(
                        {"server": mode, "options": settings, **result}
                    )
                    print(json.dumps(report["fairness"]["servers"][-1]), file=sys.stderr)
            if "disconnect" in sections:
                large = large_payload(
                    questions[0], document, args.large_candidates, args.large_chars
                )
                per_chunk = max(1, args.chunk_chars // args.large_chars)
                chunk = large_payload(questions[0], document, per_chunk, args.large_chars)
                pid = servers["split"].pid
                report["disconnect"] = asyncio.run(
                    disconnect_run(urls["split"], pid, large, chunk, args.disconnect_after_s)
                )
                print(json.dumps(report["disconnect"]), file=sys.stderr)
        finally:
            for server in servers.values():
                server.terminate()
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:  # still computing a large request's call
                    server.kill()
                    server.wait()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
