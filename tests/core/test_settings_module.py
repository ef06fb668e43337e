"""The settings module is the one place that reads the environment, its groups cover every setting once, and the
README's settings table is the one the module renders."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

import pytest

from strata_core import config_doc
from strata_core.config import GROUPS, FaultInjectionSettings, QuerySettings, Settings, env_name, field_group

ROOT = Path(__file__).resolve().parents[2]
SOURCE_TREES = [ROOT / tree for tree in ("shared/core/src", "shared/metastore/src", "shared/frame/src",
                                         "planner-api/src", "indexer-api/src", "query-api/src", "services/src",
                                         "spark-jobs/src")]
CONFIG_MODULE = ROOT / "shared/core/src/strata_core/config.py"
# `os` attributes that read or change the process's environment.
ENVIRONMENT_ACCESS = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_reads(path: Path) -> list[str]:
    """Where a module touches the environment: `os.environ...`, `os.getenv(...)`, `from os import environ`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (isinstance(node, ast.Attribute) and node.attr in ENVIRONMENT_ACCESS and isinstance(node.value, ast.Name)
                and node.value.id == "os"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: os.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: from os import {alias.name}" for alias in node.names
                      if alias.name in ENVIRONMENT_ACCESS]
    return found


def test_only_the_settings_module_reads_the_environment():
    sources = [path for tree in SOURCE_TREES for path in sorted(tree.rglob("*.py"))]
    assert all(tree.is_dir() for tree in SOURCE_TREES), [str(t) for t in SOURCE_TREES if not t.is_dir()]
    assert len(sources) > 100  # the trees were found
    offenders = [read for path in sources if path != CONFIG_MODULE for read in environment_reads(path)]
    assert offenders == [], ("read the environment through strata_core.config (a Settings field, or a function "
                             "there for another program's variable):\n" + "\n".join(offenders))
    assert environment_reads(CONFIG_MODULE)  # the scan sees the reads it is meant to find


def test_every_setting_is_in_exactly_one_group():
    claimed = [name for group in GROUPS for name in group.setting_names().values()]
    duplicates = {name for name in claimed if claimed.count(name) > 1}
    assert duplicates == set()
    assert set(claimed) - set(Settings.model_fields) == set(), "a group names a setting that does not exist"
    assert set(Settings.model_fields) - set(claimed) == set(), "a setting belongs to no group: add it to one"
    assert len({group.name for group in GROUPS}) == len(GROUPS)


@pytest.mark.parametrize("group", GROUPS, ids=lambda group: group.name)
def test_a_group_view_reads_its_settings(group):
    hints = typing.get_type_hints(group)
    for attr, name in group.setting_names().items():
        assert hints[attr] == Settings.model_fields[name].annotation, f"{group.__name__}.{attr} vs {name}"
    settings = Settings(database_url="postgresql://db/strata")
    view = getattr(settings, group.name)
    assert isinstance(view, group)
    assert {attr: getattr(view, attr) for attr in group.setting_names()} == {
        attr: getattr(settings, name) for attr, name in group.setting_names().items()}
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(view, next(iter(group.setting_names())), None)


def test_variable_names_are_the_flat_field_names(monkeypatch):
    monkeypatch.setenv("STRATA_QUERY_MAX_FILES", "7")
    monkeypatch.setenv("STRATA_FAULT_MERGE_DELAY_SECS", "1.5")
    monkeypatch.setenv("STRATA_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("STRATA_API_KEY", "k")
    settings = Settings()
    assert settings.query_max_files == settings.query.max_files == 7
    assert settings.fault_injection.merge_delay_secs == settings.fault_merge_delay_secs == 1.5
    assert (settings.log_level, settings.auth.api_key) == ("DEBUG", "k")
    assert env_name("query_max_files") == "STRATA_QUERY_MAX_FILES"
    assert field_group("fault_report_delay_secs") is FaultInjectionSettings


def test_views_follow_a_copy():
    settings = Settings(query_max_files=5)
    assert settings.model_copy(update={"query_max_files": 6}).query.max_files == 6
    assert settings.query == QuerySettings.of(settings)


def test_the_readme_settings_table_is_generated_from_the_settings():
    readme = (ROOT / "README.md").read_text()
    assert config_doc.with_table(readme) == readme, (
        "README.md's settings table differs from the settings in strata_core/config.py; regenerate it with "
        "`.tools/bin/uv run python -m strata_core.config_doc`")
    for name in Settings.model_fields:
        assert f"`{env_name(name)}`" in config_doc.render()
