"""Write dbench/catalog/data/transformer.csv, the transformer suite's kernel rows, from the model
configurations in dbench/catalog/data/transformer_models.csv (dbench.catalog.transformer derives them).

    python scripts/transformer_catalog.py          # rewrite the shipped file
    python scripts/transformer_catalog.py --check  # exit 1 when the shipped file differs
"""

from __future__ import annotations

import sys
from pathlib import Path

from dbench.catalog.transformer import KERNELS_FILE, derive_rows, load_models, to_csv

TARGET = Path(__file__).resolve().parent.parent / "dbench" / "catalog" / "data" / KERNELS_FILE


def main(argv: list[str]) -> int:
    text = to_csv(derive_rows(load_models()))
    if "--check" in argv:
        same = TARGET.read_text() == text
        print(f"{TARGET.name}: {'up to date' if same else 'differs from the derivation; run without --check'}")
        return 0 if same else 1
    TARGET.write_text(text)
    print(f"wrote {TARGET} ({text.count(chr(10)) - 1} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
