"""The README's *From Python* example, run as printed against `snapwake serve --demo` (only its
address changed), so what a newcomer copies works."""

from __future__ import annotations

import re

import pytest

from .serving import DATA_HELPER, ROOT, Serve


def test_the_readme_example_runs_as_printed(
    serve: Serve, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## From Python", 1)[1].split("\n## ", 1)[0]
    example = re.search(r"```python\n(.*?)```", section, re.S)
    assert example, "README: no python example under From Python"
    code = example.group(1)
    assert "http://127.0.0.1:8080" in code and DATA_HELPER in code
    exec(compile(code.replace("http://127.0.0.1:8080", serve.url), "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert "Data helper asleep" in printed
    assert printed[-1].startswith("awake sess-"), printed
