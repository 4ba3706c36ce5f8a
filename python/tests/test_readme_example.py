"""The usage example in docs/recording.md ("Recording PyTorch programs") runs
as written and records a valid trace."""

import contextlib
import io
import os
import re

from . import support


class ReadmeExample(support.RecorderTestCase):
    def test_readme_example_runs(self):
        with open(os.path.join(support.SOURCE_ROOT, "docs", "recording.md"), encoding="utf-8") as f:
            readme = f.read()
        section = readme[readme.index("# Recording PyTorch programs"):]
        code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
        cwd = os.getcwd()
        os.chdir(self._tmp.name)
        try:
            scope = {"__name__": "readme_example"}
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, "docs/recording.md", "exec"), scope)
        finally:
            os.chdir(cwd)
        rec = scope["rec"]
        self.assertEqual(rec.summary["iterations"], 3)
        summary = support.inspect_json(self.path("mlp.json.gz"))
        self.assertEqual(summary["peak_unswapped_bytes"], rec.peak_bytes)
        self.assertEqual(summary["num_iterations"], 3)
