"""Write tests/golden/<Model>.v<N>.json for every model in tests/test_contracts.py:GOLDEN_MODELS.

Example: python tests/golden/regenerate.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE.parent))

from test_contracts import GOLDEN_MODELS  # noqa: E402

for name, (model, version) in GOLDEN_MODELS.items():
    path = HERE / f"{name}.v{version}.json"
    path.write_text(json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")
