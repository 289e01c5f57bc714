"""Coverage-guided fuzzing of the OTLP decoders with atheris (libFuzzer), where atheris installs.

    pip install 'toolpath[fuzz]'
    python tests/fuzz/atheris_otlp.py -max_total_time=60 [corpus_dir]

Any exception other than ``OtlpDecodeError`` (or a crash) is a finding; the seed corpus is the real exports in
``tests/fixtures/spans``. ``tests/fuzz/test_atheris.py`` runs it for a bounded time when atheris is present.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from toolpath.collector import otlp

SEEDS = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "spans").glob("*.otlp.*"))


def test_one_input(data: bytes) -> None:
    if not data:
        return
    kind = "application/json" if data[0] % 2 else "application/x-protobuf"
    try:
        otlp.decode(data[1:], kind)
    except otlp.OtlpDecodeError:
        return


def main() -> None:
    dirs = [arg for arg in sys.argv[1:] if not arg.startswith("-")]
    if not dirs:
        dirs = [str(Path(__file__).resolve().parent / ".atheris-corpus")]
        sys.argv.append(dirs[0])
    corpus = Path(dirs[0])
    corpus.mkdir(parents=True, exist_ok=True)
    if not any(corpus.iterdir()):  # start from the real exports: one byte picks the decoder, the rest is the body
        for i, seed in enumerate(SEEDS):
            selector = b"\x01" if seed.suffix == ".json" else b"\x00"
            (corpus / f"seed-{i}").write_bytes(selector + seed.read_bytes())
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
