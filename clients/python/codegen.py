"""Regenerates the typed Python clients in src/ from the three APIs' OpenAPI documents, offline.

    .tools/bin/uv run python clients/python/codegen.py              # specs from the apps built in-process
    .tools/bin/uv run python clients/python/codegen.py --specs DIR --out DIR

Without --specs the documents come from the apps themselves (built, not started: no PostgreSQL, Spark or
network), which serve the same documents at /openapi.json. The generator is openapi-python-client at the version
pinned in the root pyproject's dev group; its output is formatted by ruff in isolated mode, so the bytes do not
depend on where it runs. tests/contract/test_generated_client.py regenerates from the live specs and fails on
any difference.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "src"
# API -> generated package.
PACKAGES = {"indexer": "strata_indexer_client", "planner": "strata_planner_client", "query": "strata_query_client"}
_GENERATOR_CONFIG = {
    # Isolated: the repository's ruff settings (or none, in a temporary directory) must not change the output.
    "post_hooks": ["ruff check . --isolated --no-cache --fix-only --extend-select=I --quiet",
                   "ruff format . --isolated --no-cache --quiet"],
}


def live_specs() -> dict[str, dict]:
    """Each API's OpenAPI document, from its app built with placeholder settings (never started)."""
    from strata_indexer.app import create_app as indexer_app
    from strata_planner.app import create_app as planner_app
    from strata_query.app import create_app as query_app
    from strata_shared.config import Settings

    settings = Settings(database_url="postgresql+asyncpg://codegen@127.0.0.1/codegen", api_keys="{}")
    apps = {"indexer": indexer_app(settings, background=False), "planner": planner_app(settings, background=False),
            "query": query_app(settings)}
    return {name: app.openapi() for name, app in apps.items()}


def generate(specs: dict[str, dict], out: Path) -> None:
    """Writes one package per API under `out` (replacing what was there)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    generator = Path(sys.executable).parent / "openapi-python-client"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        config = work / "config.json"
        for api, package in PACKAGES.items():
            spec = work / f"{api}.json"
            spec.write_text(json.dumps(specs[api]))
            config.write_text(json.dumps({**_GENERATOR_CONFIG, "package_name_override": package}))
            target = work / package
            subprocess.run([str(generator), "generate", "--path", str(spec), "--meta", "none", "--config", str(config),
                            "--output-path", str(target)], check=True, env=env, cwd=work, capture_output=True,
                           text=True)
            shutil.rmtree(out / package, ignore_errors=True)
            shutil.copytree(target, out / package)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--specs", type=Path, help="read {indexer,planner,query}.json from this directory")
    parser.add_argument("--out", type=Path, default=SOURCES, help="where the packages go (default: %(default)s)")
    args = parser.parse_args()
    specs = ({api: json.loads((args.specs / f"{api}.json").read_text()) for api in PACKAGES} if args.specs
             else live_specs())
    generate(specs, args.out)


if __name__ == "__main__":
    main()
