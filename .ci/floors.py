"""pyproject.toml's declared floors for .ci/check_floors: `pins` (constraints: every direct dependency at its floor,
torch at the 2.13.0 CPU build the check installs), `runner` (dev's pytest requirements), `report RESOLVED` (each
direct dependency's installed version; exit 1 unless each is its floor), `run RESULTS_JSON` (the run's test BLEU)."""
from __future__ import annotations

import json
import re
import sys

import tomllib

TORCH = "2.13.0"  # the one torch release the check installs (see .ci/check_floors)


def _project() -> dict:
    with open("pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _runner() -> list[str]:
    return [d for d in _project()["optional-dependencies"]["dev"] if re.match(r"pytest\b", d)]


def _floors() -> dict[str, str]:
    """{name: floor} of [project].dependencies and the test runner; every one is declared as `name>=floor`."""
    out = {}
    for spec in _project()["dependencies"] + _runner():
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9][0-9.]*)", spec.strip())
        if not match:
            raise SystemExit(f"pyproject.toml: {spec!r}: the floor check expects name>=version")
        out[match[1]] = match[2]
    return out


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def main(argv: list[str]) -> int:
    command = argv[0]
    if command == "pins":
        print("\n".join(f"{name}=={TORCH if name == 'torch' else floor}" for name, floor in _floors().items()))
    elif command == "runner":
        print("\n".join(_runner()))
    elif command == "report":
        with open(argv[1]) as f:
            installed = {_canonical(n): v for n, _, v in (line.strip().partition("==") for line in f) if v}
        from packaging.version import Version  # run in the checked environment (lightning requires packaging)

        wrong = []
        for name, floor in _floors().items():
            version = installed.get(_canonical(name))
            at_floor = version is not None and \
                Version(Version(version).public) == Version(TORCH if name == "torch" else floor)  # 2.6.0 is 2.6
            print(f"  {name} {version or 'not installed'}" + ("" if at_floor else f" (declared floor {floor})"))
            if not at_floor:
                wrong.append(name)
        if wrong:
            print(f"floors: 0 passed, 1 failed (not at their floor: {', '.join(wrong)})")
            return 1
    elif command == "run":
        with open(argv[1]) as f:
            test = json.load(f)["test"]
        print(f"  python train.py debug=limit: test BLEU {test['bleu']:.2f} ({test['bleu_signature']})")
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
