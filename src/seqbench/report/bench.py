"""`seqbench bench`'s tables, from the record seqbench.measure.bench.run_bench returns."""
from __future__ import annotations

import json
from pathlib import Path

from seqbench.common import portable
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text
from seqbench.measure.speed import MAX_INTERVAL, median_ratio


def _compared(ratio: dict | None) -> str:
    """A ratio measured round by round (seqbench.measure.speed.median_ratio): its median, or why there is none."""
    if ratio is None:
        return "-"
    if ratio["ratio"] is not None:
        return f"{ratio['ratio']:.2f}x"
    interval = ratio.get("interval")
    if interval is None:
        return f"unsteady (median {ratio['median']:.2f}x; too few rounds for a 95% interval)"
    return f"unsteady (median {ratio['median']:.2f}x, 95% interval {interval[0]:.2f}-{interval[1]:.2f}x)"


def _rate(row: dict) -> str:
    text = f"{row['target_tokens_per_s']:,.0f}"
    return text if row.get("steady", True) else f"{text} (unsteady: windows spread {row['spread']:.0%})"


def _mfu(flops: dict) -> str:
    """The table's MFU cell: the share, or why there is none (the header line says how the peak was measured)."""
    if flops.get("mfu") is not None:
        return f"{flops['mfu']:.1%}"
    return "n/a (stale peak: see below)" if flops.get("mfu_note") else "n/a"


def _speed(speed: dict) -> str:
    text = f"{speed['sentences_per_s']:,.1f} ({speed['target_tokens_per_s']:,.0f})"
    return text if speed.get("steady", True) else f"{text}, unsteady ({speed['spread']:.0%})"


def _onednn(machine: dict) -> str:
    """How seqbench's float32 CPU inference multiplied (seqbench.models.linear), where the record says."""
    if "onednn_linear" not in machine or machine["device_type"] != "cpu":
        return ""
    return ", linear layers' inference through oneDNN" if machine["onednn_linear"] else \
        ", linear layers through F.linear only (SEQBENCH_ONEDNN_LINEAR=0)"


def markdown(result: dict) -> str:
    machine, settings = result["machine"], result["settings"]
    peak = machine["peaks"]["float32"]
    busy = peak.get("cpu_busy_fraction")
    idle = {True: "cores idle", False: "cores busy", None: "load unknown"}[peak["cores_idle"]] + \
        (f": {busy:.0%} busy just before" if busy is not None else "")
    unfit = f"; not fit to cache: {'; '.join(peak['unfit'])}" if peak.get("unfit") else ""
    lines = [f"device: {machine['device']} ({machine['device_type']}), {machine['threads']} threads, fp32, "
             f"torch {machine['torch']}" + _onednn(machine),
             f"MFU denominator: fp32 matmul peak {peak['flops_per_s'] / 1e9:,.0f} GFLOP/s ({peak['source']}; measured "
             f"{peak['measured_at']}, n={peak['matrix_size']}, {peak['measure_seconds']:.1f} s, {idle}{unfit})",
             f"training: {settings['pairs']:,} generated pairs, lengths {settings['lengths'][0]}-"
             f"{settings['lengths'][1]}, vocab {settings['vocab_size']:,}, {settings['max_tokens']:,}-token batches; "
             f"{settings['windows']} rounds{_added(settings['min_rounds'], settings['max_rounds'])}, each timing one "
             "window of every row in turn "
             f"({settings['window_batches']} batches, the same in every window) after {settings['warmup_steps']} "
             "warm-up steps; rates are medians over the windows, ratios medians of the per-round ratios, given when "
             f"the 95% interval of that median spans at most {MAX_INTERVAL:.0%} of it", "",
             "| model | params | tgt tok/s | src+tgt tok/s | step ms | GFLOP/s | MFU | peak MB "
             "| x nn.Transformer | x same-shape loop | x fairseq |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    stale = next((row["flops"]["mfu_note"] for row in result["training"] if row["flops"].get("mfu") is None
                  and row["flops"].get("mfu_note")), None)
    for row in result["training"]:
        same, anchor = row.get("vs_same_shape_baseline"), row.get("vs_fairseq")
        same = f"{_compared(same)} ({same['baseline']})" if same else "-"
        anchor = _compared(anchor)
        if row.get("vs_fp32"):
            same = f"{_compared(row['vs_fp32'])} (fp32)"
        memory = row["memory"]["cuda_max_allocated_mb"] or row["memory"]["cpu_rss_peak_mb"]
        params = f"{row['parameters'] / 1e6:.2f}M" if row.get("parameters") else "-"
        both = f"{row['src_tgt_tokens_per_s']:,.0f}" if row.get("src_tgt_tokens_per_s") else "-"
        lines.append(f"| {row['name']} | {params} | {_rate(row)} | {both} | {1000 * row['step_time_s']:,.0f} "
                     f"| {row['flops']['achieved_train_flops_per_s'] / 1e9:,.1f} | {_mfu(row['flops'])} "
                     f"| {f'{memory:,.0f}' if memory else '-'} | {_compared(row['vs_nn_transformer'])} | {same} "
                     f"| {anchor} |")
    if stale:
        lines += ["", f"MFU {stale}"]
    lines += ["", f"decoding: {settings['decode_sentences']} sentences, every hypothesis exactly "
                  f"{settings['decode_tokens']} tokens, {_decode_windows(settings, result['decoding'])}; "
              "sentences/s (target tokens/s)",
              "",
              f"| model | greedy | beam {settings['beam_size']} | greedy, no cache | cache speed-up (greedy) |",
              "|---|---|---|---|---|"]
    for row in result["decoding"]:
        cells = [_speed(row[k]) for k in ("greedy", "beam", "greedy_uncached")]
        lines.append(f"| {row['name']} | {' | '.join(cells)} | {_compared(row['cache_speedup_greedy'])} |")
    engine_rows = [row for row in result["decoding"] if "ctranslate2" in row]
    if engine_rows:
        own = all(engine.get("process") == "own" for row in engine_rows for engine in row["ctranslate2"].values())
        where = "in a process of its own" if own else "inside seqbench's process (an older record)"
        lines += ["", f"the same weights decoded by CTranslate2 {where} (same sources, forced length and threads); "
                      "sentences/s, and seqbench's speed as a share of the engine's", "",
                  f"| model | engine | greedy | beam {settings['beam_size']} | seqbench / engine, greedy "
                  f"| seqbench / engine, beam {settings['beam_size']} |", "|---|---|---|---|---|---|"]
        for row in engine_rows:
            for compute_type, engine in row["ctranslate2"].items():
                share = engine["seqbench_share"]
                lines.append(f"| {row['name']} | CTranslate2 {compute_type} | {_speed(engine['greedy'])} "
                             f"| {_speed(engine['beam'])} | {_compared(share['greedy'])} "
                             f"| {_compared(share['beam'])} |")
    return "\n".join(lines)


def _added(least: int, most: int) -> str:
    """How many rounds the bench could add until every ratio was steady."""
    return "" if most == least else f" (at least {least}, more up to {most} until every ratio is given)"


def _decode_windows(settings: dict, rows: list[dict]) -> str:
    """The decoding rounds each model took: the bench adds rounds model by model, so they can differ."""
    taken = {row["name"]: len(row["greedy"]["rounds"]) for row in rows}
    counts = sorted(set(taken.values()))
    if len(counts) == 1:
        done = f"{counts[0]} rounds"
    else:
        done = f"{counts[0]}-{counts[-1]} rounds ({', '.join(f'{name} {n}' for name, n in taken.items())})"
    added = _added(settings["decode_rounds"], settings["decode_max_rounds"])
    return (f"{done}{added}, each timing one pass of every row in turn "
            "(CTranslate2's too); rates are medians, ratios medians of the per-round ratios")


def _given(ratio: dict | None, rates: str = "") -> str:
    """A headline cell: the ratio in bold with its 95% interval, then `rates` (the two it divides); a ratio not
    given says why, as the bench's own tables do (`_compared`)."""
    if ratio is None or ratio["ratio"] is None:
        return _compared(ratio)
    low, high = ratio["interval"]  # a given ratio always has one (seqbench.measure.speed.median_ratio)
    return f"**{ratio['ratio']:.2f}x** [{low:.2f}, {high:.2f}]{rates}"


def _headline_rows(result: dict) -> dict[str, str]:
    """{what is compared: its cell} for one bench record: training against fairseq and bf16 against fp32, decoding
    against CTranslate2 per compute type where the engine ran in a process of its own (`in_process_engine`), and the
    cache's speed-up of greedy decoding (the ratios the record holds); a bf16 twin's decoding against fp32's as a
    ratio of rates."""
    training = {row["name"]: row for row in result["training"]}
    decoders = {row["name"]: row for row in result["decoding"]}
    beam = result["settings"]["beam_size"]
    kinds = (("greedy", "greedy"), ("beam", f"beam {beam}"))
    cells = {}
    for row in result["training"]:
        for key, other in (("vs_fairseq", "fairseq"), ("vs_fp32", "fp32")):
            if row.get(key):
                by = training[row[key][other]]
                rates = f" ({row['target_tokens_per_s']:,.0f} vs {by['target_tokens_per_s']:,.0f} target tokens/s)"
                cells[f"{row['name']} training / {other}"] = _given(row[key], rates)
    for row in result["decoding"]:
        for compute_type, engine in row.get("ctranslate2", {}).items():
            if engine.get("process") != "own":  # timed inside seqbench's process: it understates the engine
                continue
            for kind, shown in kinds:
                cells[f"{row['name']} {shown} / CTranslate2 {compute_type}"] = _given(
                    engine["seqbench_share"][kind],
                    f" ({row[kind]['sentences_per_s']:,.1f} vs {engine[kind]['sentences_per_s']:,.1f} sentences/s)")
        cells[f"{row['name']} greedy: cache speed-up"] = _given(row["cache_speedup_greedy"])
    for row in result["training"]:  # a bf16 twin decodes in passes of its own: a ratio of rates, no interval
        fp32 = decoders.get(row.get("shape_of")) if row["kind"] == "bf16" else None
        for kind, shown in kinds if fp32 else ():
            ours, theirs = decoders[row["name"]][kind]["sentences_per_s"], fp32[kind]["sentences_per_s"]
            cells[f"{row['name']} {shown} / fp32"] = \
                f"{ours / theirs:.2f}x, separate passes, no interval ({ours:,.1f} vs {theirs:,.1f} sentences/s)"
    return cells


def in_process_engine(result: dict) -> bool:
    """Whether a record's CTranslate2 rows were timed inside seqbench's process (records before 2026-12-06): there
    the engine ran at about 0.6-0.8x of its own speed (docs/speed.md), so a headline leaves them out."""
    return any(engine.get("process") != "own" for row in result["decoding"]
               for engine in row.get("ctranslate2", {}).values())


def speed_headline(directories: list, shown: list[str]) -> str:
    """The ratios of several `seqbench bench` records (DIR/bench.json each) as one table, a column per record, for a
    document's `<!-- headline: DIR... --bench -->` block (seqbench.report.headline.render)."""
    results = []
    for directory, name in zip(directories, shown):
        path = Path(directory) / "bench.json"
        if not path.is_file():
            raise InputError(f"{name}: no bench.json in it; a --bench headline names `seqbench bench --out` folders")
        result = json.loads(path.read_text(encoding="utf-8"))
        if any(not isinstance(row.get("cache_speedup_greedy"), dict) for row in result["decoding"]):
            raise InputError(f"{name}: its bench.json predates ratios with intervals (2026-12-04); a --bench "
                             "headline needs a record of the current `seqbench bench`")
        results.append(result)
    columns = [_headline_rows(result) for result in results]
    compared = list(dict.fromkeys(key for column in columns for key in column))
    header = ["compared"] + [f"{r['settings']['vocab_size']:,} words (`{Path(name).name}`)"
                             for r, name in zip(results, shown)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [f"| {key} | " + " | ".join(column.get(key, "-") for column in columns) + " |" for key in compared]
    machines = sorted({f"{r['machine']['device']} ({r['machine']['device_type']}, {r['machine']['threads']} threads, "
                       f"{r['machine']['dtype']}, torch {r['machine']['torch']})" for r in results})
    commands = "; ".join(f"`{name}`: `{r['command']}`" for r, name in zip(results, shown))
    in_process = [name for r, name in zip(results, shown) if in_process_engine(r)]
    footer = (f"Machine: {'; '.join(machines)}. Each ratio is the median of per-round ratios of two rows timed side "
              "by side in every round, with its 95% order-statistic interval (scipy.stats.quantile_test); it is "
              f"given when that interval spans at most {MAX_INTERVAL:.0%} of the median, else marked unsteady. "
              "Rates in brackets are the two rows' medians. A cache speed-up is greedy decoding with the "
              "incremental cache over recomputing every prefix. "
              + (f"CTranslate2 rows are left out of {', '.join(f'`{Path(n).name}`' for n in in_process)}: the engine "
                 "ran inside seqbench's process there, which slows it (docs/speed.md); their records keep them. "
                 if in_process else "")
              + f"Commands: {commands}; generated by "
              "`seqbench report --headline FILE`.")
    return "\n".join(lines) + "\n\n" + footer + "\n"


def write_bench(out: Path, result: dict) -> str:
    """bench.json and bench.md of a bench record into the folder `out`, the record naming the code that made it
    (seqbench_commit, as results.json does); returns the table."""
    from seqbench.rundir.results import source_commit

    result = {**result, "seqbench_commit": source_commit()}
    table = markdown(result)
    atomic_write_text(out / "bench.json", json.dumps(result, indent=2, default=str) + "\n")
    atomic_write_text(out / "bench.md", table + "\n")
    return table


def recorded_command(argv: list[str]) -> str:
    """The command as bench.json keeps it (and the Speed tables print it): fairseq's environment as VENV and the
    output folder relative to the working directory, else OUT, so a record names no folder of this machine."""
    shown_as = {"--fairseq": lambda value: "VENV", "--out": lambda value: portable.shown(value, "OUT")}
    words, pending = [], None
    for arg in argv:
        option, equals, value = arg.partition("=")
        if pending is not None:
            words.append(pending(arg))
            pending = None
        elif option in shown_as and equals:
            words.append(f"{option}={shown_as[option](value)}")
        else:
            words.append(arg)
            pending = shown_as.get(arg)
    return " ".join(["seqbench", "bench", *words])


def decode_ab_headline(files: list, shown: list[str]) -> str:
    """Interleaved A/B records of seqbench's decoding (docs/results/bench/*_decode_ab/ab.py: two checkouts and
    CTranslate2 float32, each in a process of its own, pass by pass in turn) as one table, for a document's
    `<!-- headline: FILE... --decode-ab -->` block."""
    lines = ["| record | words | decoding | after / before | identical hypotheses | sentences/s before, after, "
             "CTranslate2 | after / CTranslate2 float32 |", "|---|---|---|---|---|---|---|"]
    described = []
    for path, name in zip(files, shown):
        if not Path(path).is_file():
            raise InputError(f"{name}: no such A/B record; a --decode-ab headline names ab.py's JSON files")
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        for kind, row in record["summary"].items():
            # the ratios from the timed rounds, by the bench's own rule (median_ratio), not from the summary
            rounds = [r for r in record["rounds"] if r["kind"] == kind]
            after = median_ratio([r["A"]["seconds"] / r["B"]["seconds"] for r in rounds])
            engine = median_ratio([r["ct2_seconds"] / r["B"]["seconds"] for r in rounds])
            same = all(r["A"]["sha256"] == r["B"]["sha256"] for r in rounds)
            rates = row["sentences_per_s"]
            lines.append(f"| `{Path(name).name}` | {record['vocab']:,} | {kind} | {_given(after)} | "
                         f"{'yes' if same else '**no**'} | {rates['A']:.1f}, {rates['B']:.1f}, "
                         f"{rates['ct2']:.1f} | {_given(engine)} |")
        rounds = len(record["rounds"]) // len(record["summary"])
        described.append(f"`{Path(name).name}`: before {record['A']}, after {record['B']}, {rounds} rounds, "
                         f"{record['threads']} threads")
    footer = ("Each round decodes the bench's 200 sources (forced to 23 tokens) once with each checkout and with "
              "CTranslate2 float32, each in a process of its own, in alternating order; a ratio is the median of "
              "per-round ratios with its 95% order-statistic interval (scipy.stats.quantile_test), given when that "
              f"interval spans at most {MAX_INTERVAL:.0%} of the median. Records: {'; '.join(described)} "
              "(a commit with + is its working tree's changes over it). Command: `A=CHECKOUT/src B=CHECKOUT/src "
              "python docs/results/bench/2026-12-06_decode_ab/ab.py VOCAB ROUNDS OUT.json`; generated by "
              "`seqbench report --headline FILE`.")
    return "\n".join(lines) + "\n\n" + footer + "\n"
