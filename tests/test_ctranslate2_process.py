"""seqbench.measure.ctranslate2_process, the bench's CTranslate2 anchor in a process of its own: the worker runs apart
from this process and without torch, decodes exactly what the in-process Engine decodes from the same converted
model, and a worker that fails to load, dies or stops answering is one line, never a hang. No timing is asserted."""
from __future__ import annotations

import os
import signal

import pytest
import torch

from seqbench.common.errors import InputError
from seqbench.decoding.ctranslate2 import Engine, convert, decoding_options, numbered_vocabulary
from seqbench.decoding.search import DecodingConfig
from seqbench.measure.ctranslate2_process import EngineProcess

from conftest import SRC_VOCAB, TGT_VOCAB, build_tiny_model

pytest.importorskip("ctranslate2")

SRC_TOKENS, TGT_TOKENS = numbered_vocabulary(SRC_VOCAB), numbered_vocabulary(TGT_VOCAB)
FORCED = 7  # the bench forces every hypothesis to one length: min_len = max_len


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ctranslate2") / "model"
    convert(build_tiny_model("transformer"), SRC_TOKENS, TGT_TOKENS, folder)
    return folder


def _batches(sizes=(8, 8, 5), seed: int = 0) -> list[list[list[int]]]:
    g = torch.Generator().manual_seed(seed)
    return [[torch.randint(4, SRC_VOCAB, (int(length),), generator=g).tolist()
             for length in torch.randint(1, 12, (size,), generator=g)] for size in sizes]


def _tokens(batches: list[list[list[int]]], vocabulary: list[str]) -> list[list[list[str]]]:
    return [[[vocabulary[i] for i in sentence] for sentence in batch] for batch in batches]


@pytest.mark.parametrize("compute_type", ["float32", "int8"])
def test_the_worker_decodes_what_the_in_process_engine_decodes(converted, compute_type):
    batches = _batches()
    engine = Engine(converted, SRC_TOKENS, TGT_TOKENS, threads=1, compute_type=compute_type)
    with EngineProcess(converted, compute_type, threads=1) as worker:
        assert worker.pid != os.getpid() and worker.torch_loaded is False  # only CTranslate2 loaded there
        for cfg in (DecodingConfig(beam_size=1, min_len=FORCED, max_len=FORCED),
                    DecodingConfig(beam_size=3, min_len=FORCED, max_len=FORCED, length_penalty=0.6)):
            for warmup in (1, 0):  # the bench's first round warms up, the later ones do not
                reply = worker.decode(_tokens(batches, SRC_TOKENS), decoding_options(cfg, FORCED), warmup)
                expected = [hypothesis for batch in batches for hypothesis in engine.generate(batch, cfg)]
                assert reply["hypotheses"] == [[TGT_TOKENS[i] for i in h] for h in expected]
                assert all(len(h) == FORCED for h in reply["hypotheses"])


def _one_line(raised) -> str:
    message = str(raised.value)
    assert "\n" not in message and "python -m seqbench.measure.ctranslate2_process" in message
    return message


def test_a_worker_that_dies_is_one_line(converted):
    with EngineProcess(converted, "float32", threads=1) as worker:
        os.kill(worker.pid, signal.SIGKILL)
        with pytest.raises(InputError) as raised:
            worker.decode(_tokens(_batches(), SRC_TOKENS), decoding_options(DecodingConfig(), FORCED))
    message = _one_line(raised)
    assert "CTranslate2 float32" in message and "was killed by SIGKILL (out of memory?) while decoding" in message


def test_a_worker_that_stops_answering_is_killed_after_the_timeout(converted):
    with EngineProcess(converted, "float32", threads=1) as worker:
        worker.timeout = 1  # loaded: now a reply must come within a second
        os.kill(worker.pid, signal.SIGSTOP)
        with pytest.raises(InputError) as raised:
            worker.decode(_tokens(_batches(), SRC_TOKENS), decoding_options(DecodingConfig(), FORCED))
        assert worker.process.poll() is not None  # killed, not left stopped
    assert "gave no reply in 1 s while decoding, and was killed" in _one_line(raised)


def test_a_worker_that_cannot_load_the_model_says_why(tmp_path):
    with pytest.raises(InputError) as raised:
        EngineProcess(tmp_path / "missing", "float32", threads=1)
    message = _one_line(raised)
    assert "exited with status 1 while loading the model; its stderr ends: " in message and "missing" in message
