"""Measurements beside the scores: decoding speed and device clocks (speed), the machine's matmul peak and MFU
(peaks), peak memory (memory), and the plain PyTorch models `seqbench bench` compares against (baselines)."""
