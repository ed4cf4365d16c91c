"""Loads `jaxpr graph --format model-explorer` output with Model Explorer's
own package (ai-edge-model-explorer): the JSON becomes its
`graph_builder.GraphCollection` dataclasses (dacite, strict: an unknown or
mistyped field fails), goes through `ModelExplorerConfig`'s path for
in-memory graphs (what the server sends the web app), and must come back
unchanged. Then the graph's structure is checked as the web app needs it.

    python load_model_explorer.py FILE.json EQUATIONS
Prints `loaded G graphs, N nodes, E equations, K edges` on success.
"""
import json
import sys

import dacite
import model_explorer
from model_explorer import graph_builder

path, equations = sys.argv[1], int(sys.argv[2])
with open(path, encoding="utf-8") as f:
    data = json.load(f)

collection = dacite.from_dict(
    data_class=graph_builder.GraphCollection,
    data=data,
    config=dacite.Config(strict=True),
)

config = model_explorer.config()
config.graphs_list.append({"graphCollections": [collection]})
sent = json.loads(json.loads(config.get_transferrable_data()["graphs_list"])[0])
back = sent["graphCollections"][0]


def same(back, orig, where):
    """`back` is `orig`, but for fields the file leaves out, which come
    back with the dataclasses' defaults."""
    if isinstance(orig, dict):
        assert isinstance(back, dict), where
        for k in back:
            if k not in orig:
                assert back[k] in (None, "node_count_desc"), f"{where}.{k}: {back[k]!r} not in the file"
        for k in orig:
            assert k in back, f"{where}.{k} was dropped"
            same(back[k], orig[k], f"{where}.{k}")
    elif isinstance(orig, list):
        assert isinstance(back, list) and len(back) == len(orig), where
        for i, (b, o) in enumerate(zip(back, orig)):
            same(b, o, f"{where}[{i}]")
    else:
        assert back == orig, f"{where}: {back!r} != {orig!r}"


same(back, data, "collection")

graph_ids = {g.id for g in collection.graphs}
assert len(graph_ids) == len(collection.graphs), "graph ids are not unique"
nodes = edges = eqns = 0
for g in collection.graphs:
    ids = {n.id for n in g.nodes}
    assert len(ids) == len(g.nodes), f"node ids are not unique in {g.id}"
    outputs = {n.id: {o.id for o in n.outputsMetadata} for n in g.nodes}
    for n in g.nodes:
        nodes += 1
        kind = [a.value for a in n.attrs if a.key == "kind"]
        eqns += kind == ["eqn"]
        for e in n.incomingEdges:
            edges += 1
            assert e.sourceNodeId in ids, f"{g.id}: edge into {n.id} from unknown {e.sourceNodeId}"
            outs = outputs[e.sourceNodeId]
            assert e.sourceNodeOutputId in outs, f"{g.id}: {e.sourceNodeId} has no output {e.sourceNodeOutputId}"
        for s in n.subgraphIds:
            assert s in graph_ids, f"{g.id}: {n.id} names unknown subgraph {s}"
assert eqns == equations, f"{eqns} equation nodes, expected {equations}"
print(f"loaded {len(collection.graphs)} graphs, {nodes} nodes, {eqns} equations, {edges} edges")
