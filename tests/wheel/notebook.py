"""The rich display in a real notebook, run by tests/wheel.rs:

    python notebook.py OUT

writes OUT/jaxpr.ipynb, executes it in a Jupyter kernel (nbclient, ipykernel:
the kernel of this interpreter, with the installed wheel importable), writes
the outputs' HTML into OUT/outputs.html as a notebook front end shows them,
renders it and the graph's own page in headless Chromium, and checks the DOM
and the screenshot for what must be there.
"""

import html
import re
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

CELLS = [
    """import jax, jax.numpy as jnp, jaxpr
def sample(k):
    a = jax.random.normal(k, (3,))
    b = jax.random.normal(k, (3,))
    return jnp.tanh(a) @ b
def sample_sin(k):
    a = jax.random.normal(k, (3,))
    return jnp.sin(a) @ a
key = jax.random.key(0)""",
    "jaxpr.check(sample, key)",
    "jaxpr.stats(sample, key)",
    "jaxpr.graph(sample, key)",
    "jaxpr.diff(sample, sample_sin, key)",
]

# What each displayed cell must show, as text (text/plain) and as HTML.
EXPECTED = {
    1: ("warning[J0013]", 'class="jaxpr-diagnostic jaxpr-warning"'),
    2: ("sample.jaxpr:", 'class="jaxpr-stats-table"'),
    3: ("{ lambda", 'class="jaxpr-graph"'),
    4: ("differ", 'class="jaxpr-diff"'),
}


def chromium(*args):
    done = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,2400",
         "--virtual-time-budget=5000", *args],
        capture_output=True, text=True, timeout=300,
    )
    return done


def main(out: Path):
    out.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(out)}}).execute()
    nbformat.write(nb, out / "jaxpr.ipynb")

    parts = []
    for i, (text, html_marker) in EXPECTED.items():
        outputs = [o for o in nb.cells[i].outputs if o.output_type == "execute_result"]
        assert len(outputs) == 1, (i, nb.cells[i].outputs)
        data = outputs[0]["data"]
        assert text in data["text/plain"], (i, data["text/plain"][:500])
        assert html_marker in data["text/html"], (i, data["text/html"][:500])
        parts.append(f'<div class="cell" id="cell{i}">{data["text/html"]}</div>')
    page = out / "outputs.html"
    page.write_text("<!doctype html><html><head><meta charset='utf-8'></head><body style='background:#fff'>"
                    + "\n".join(parts) + "</body></html>", encoding="utf-8")

    dom = chromium("--dump-dom", page.as_uri()).stdout
    assert "warning[J0013]" in html.unescape(dom) and "^" in dom, dom[:2000]
    # The user's line, from the source information JAX recorded in the cell.
    assert re.search(r'class="jaxpr-python-line">from <code>\S*ipykernel\S*:4:8 \(sample\)', dom), dom[:2000]
    assert re.search(r"<td>main</td>", dom) and "FLOPs" in dom and "jaxpr-stats-lines" in dom, "the stats tables"
    assert dom.count("<iframe") == 1 and 'class="jaxpr-graph"' in dom, "the graph's frame"
    assert "sample_sin" in dom and "background:#dfd" in dom.replace(" ", ""), "the diff, side by side"

    shot = out / "outputs.png"
    done = chromium(f"--screenshot={shot}", page.as_uri())
    assert shot.is_file(), done.stderr
    from PIL import Image

    pixels = Image.open(shot).convert("RGB")
    colours = {c for _, c in pixels.getcolors(maxcolors=1 << 24)}
    # Drawn, not blank: the warning's border, the diff's added and removed lines.
    for name, rgb in (("warning border", (0x8A, 0x6D, 0x00)), ("added line", (0xDD, 0xFF, 0xDD)),
                      ("removed line", (0xFF, 0xDD, 0xDD))):
        assert rgb in colours, f"the screenshot has no {name} ({rgb})"
    dark = sum(n for n, c in pixels.getcolors(maxcolors=1 << 24) if sum(c) < 200)
    assert dark > 5000, f"only {dark} dark pixels: no text drawn"

    # The graph's frame holds `jaxpr graph`'s viewer: drawn in Chromium on its own.
    frame = re.search(r'srcdoc="([^"]*)"', nb.cells[3].outputs[0]["data"]["text/html"]).group(1)
    graph_page = out / "graph.html"
    graph_page.write_text(html.unescape(frame), encoding="utf-8")
    graph_dom = chromium("--dump-dom", graph_page.as_uri()).stdout
    assert 'data-ready="1"' in graph_dom, graph_dom[:2000]
    drawn = graph_dom.count('class="node eqn')
    assert drawn >= 5, f"{drawn} equation nodes drawn"
    print(f"notebook: 4 outputs displayed, {len(colours)} colours in the screenshot, {drawn} graph nodes drawn")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
    print("notebook: ok")
