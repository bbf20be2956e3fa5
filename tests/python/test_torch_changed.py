"""After torch changes under the package, importing it raises one clear error.

A copy of the built package says it was built for another torch (its
_built_for.py); importing the copy must fail with an ImportError naming both
versions and the command that rebuilds, and never load the extension (whose
C++ symbols would not match). The package as built imports.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

import torch

spec = importlib.util.find_spec("pgstrategy_torch")
package = os.path.dirname(spec.origin)
failures = []
with tempfile.TemporaryDirectory(prefix="pgstrategy-torch-changed-") as folder:
    copy = os.path.join(folder, "pgstrategy_torch")
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    built_for = os.path.join(copy, "_built_for.py")
    with open(built_for, encoding="utf-8") as file:
        text = re.sub(r'^TORCH_VERSION = .*$', 'TORCH_VERSION = "1.13.1"', file.read(), flags=re.M)
    with open(built_for, "w", encoding="utf-8") as file:
        file.write(text)
    result = subprocess.run([sys.executable, "-c", "import pgstrategy_torch"], env={**os.environ, "PYTHONPATH": folder},
                            capture_output=True, text=True, check=False)
    last = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
    if result.returncode == 0:
        failures.append("importing a package built for torch 1.13.1 succeeded")
    for wanted in ("ImportError", "1.13.1", torch.__version__, "pip install --force-reinstall"):
        if wanted not in last:
            failures.append(f"the error's last line lacks {wanted!r}: {last!r}")
    if "undefined symbol" in result.stderr:
        failures.append("the extension was loaded anyway")
import pgstrategy_torch  # noqa: E402  (as built: imports)

print(f"torch changed: {'FAILED: ' + '; '.join(failures) if failures else 'PASSED'} ({torch.__version__})")
sys.exit(1 if failures else 0)
