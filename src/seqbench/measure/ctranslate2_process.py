"""CTranslate2 as the bench's decoding anchor, in a process of its own as a user runs it: inside seqbench's process,
where torch's thread pool has just run, the same engine decoded at 0.56-0.81x of its own speed (issue 55).

The worker, `python -m seqbench.measure.ctranslate2_process MODEL_DIR --compute-type T --threads N [--device D]`,
imports CTranslate2, the standard library and seqbench.common.errors, nothing else (not torch: `import ctranslate2`
leaves it out, and so does this module), loads the converted model folder once (intra_threads N, inter_threads 1,
as seqbench.decoding.ctranslate2's Engine does), writes one ready line, then answers one JSON line per request line
until its stdin closes (so it ends with the bench, however the bench ends):

    ready:   {"pid": P, "torch_loaded": false, "ctranslate2": VERSION}
    request: {"batches": [[[token, ...], ...], ...], "options": {translate_batch's keyword arguments}, "warmup": W}
    reply:   {"seconds": S, "hypotheses": [[token, ...], ...]}

A request is one decoding pass, as seqbench.measure.speed.decode_speed times one in seqbench's process: the first W
batches decoded untimed (CTranslate2's own benchmark leaves a loaded model's first translation out of its timing),
then every batch in turn, timed with time.perf_counter around the translate_batch calls alone (neither the JSON nor
the pipe); the hypotheses are each sentence's best, in the order of the batches.

`EngineProcess` is the bench's end: it starts the worker, sends a pass and reads its reply within `timeout` seconds.
A worker that exits, or does not answer in time (it is then killed), is one line (InputError) with its exit status
and the last line it wrote to stderr, never a hang.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time

from seqbench.common.errors import InputError

REPLY_TIMEOUT = 600.0  # seconds a worker may take to load or to decode a pass: far above any pass the bench times


class EngineProcess:
    """A converted model loaded by CTranslate2 in a worker process, decoding one pass per `decode` call."""

    def __init__(self, model_dir, compute_type: str, threads: int, device: str = "cpu",
                 timeout: float = REPLY_TIMEOUT):
        self.compute_type, self.timeout = compute_type, timeout
        self.stderr = tempfile.TemporaryFile()  # a file, not a pipe: a chatty engine must never block on it
        self.process = subprocess.Popen(
            [sys.executable, "-m", "seqbench.measure.ctranslate2_process", str(model_dir), "--compute-type",
             compute_type, "--threads", str(threads), "--device", device],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self._reply("loading the model")
        self.pid, self.torch_loaded = ready["pid"], ready["torch_loaded"]

    def _read(self) -> None:
        """The worker's stdout, line by line, into the queue `_reply` waits on; None when it closes."""
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _reply(self, doing: str) -> dict:
        try:
            line = self.lines.get(timeout=self.timeout)
        except queue.Empty:
            self.process.kill()
            self.process.wait()
            raise self._failure(f"gave no reply in {self.timeout:g} s while {doing}, and was killed") from None
        if line is None:
            self.process.wait()
            raise self._failure(f"{_exit(self.process.returncode)} while {doing}")
        return json.loads(line)

    def _failure(self, what: str) -> InputError:
        self.stderr.seek(0)
        said = self.stderr.read().decode(errors="replace").strip().splitlines()
        last = f"; its stderr ends: {said[-1][:300]}" if said else "; it wrote nothing to stderr"
        return InputError(f"CTranslate2 {self.compute_type} in its own process (python -m "
                          f"seqbench.measure.ctranslate2_process) {what}{last}")

    def decode(self, batches: list[list[list[str]]], options: dict, warmup: int = 0) -> dict:
        """One pass over `batches` (source token strings), the first `warmup` of them decoded untimed first:
        {"seconds": the timed translate_batch calls, "hypotheses": the best hypothesis of every sentence}."""
        try:
            self.process.stdin.write(json.dumps({"batches": batches, "options": options, "warmup": warmup}) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # it has exited: its reply is the end of its output, which says how
        return self._reply("decoding")

    def close(self) -> None:
        """Ends the worker (it exits when its stdin closes) and waits for it, killing one that does not exit."""
        try:
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.stderr.close()

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


def _exit(status: int) -> str:
    """How a worker ended, in words: a kill names its signal (SIGKILL is most often the out-of-memory killer)."""
    if status >= 0:
        return f"exited with status {status}"
    name = next((s.name for s in signal.Signals if s == -status), f"signal {-status}")
    return f"was killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")


def serve(model_dir: str, compute_type: str, threads: int, device: str, requests, replies) -> None:
    """The worker's loop: the model loaded once, then a reply line for every request line."""
    import ctranslate2

    translator = ctranslate2.Translator(model_dir, device=device, compute_type=compute_type,
                                        intra_threads=threads, inter_threads=1)
    _send(replies, {"pid": os.getpid(), "torch_loaded": "torch" in sys.modules, "ctranslate2": ctranslate2.__version__})
    for line in requests:
        request = json.loads(line)
        batches, options = request["batches"], request["options"]
        for batch in batches[:request["warmup"]]:
            translator.translate_batch(batch, **options)
        start = time.perf_counter()
        results = [translator.translate_batch(batch, **options) for batch in batches]
        seconds = time.perf_counter() - start
        _send(replies, {"seconds": seconds,
                        "hypotheses": [result.hypotheses[0] for batch in results for result in batch]})


def _send(replies, message: dict) -> None:
    replies.write(json.dumps(message) + "\n")
    replies.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m seqbench.measure.ctranslate2_process",
                                     description="Decode passes of a CTranslate2 model folder sent as JSON lines.")
    parser.add_argument("model_dir")
    parser.add_argument("--compute-type", default="default")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    serve(args.model_dir, args.compute_type, args.threads, args.device, sys.stdin, sys.stdout)


if __name__ == "__main__":
    main()
