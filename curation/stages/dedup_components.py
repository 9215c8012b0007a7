"""Connected components of the verified near-duplicate edges, on Dask dataframes: the alternating large-star /
small-star algorithm of Kiveris et al. ("Connected Components in MapReduce and Beyond", SoCC 2014). Each step is
one shuffle of the edges by node; the graph shrinks to one star per component, centred on its smallest key,
which is then every member's label. The client holds only counts (edges, distinct children, children that are
also parents) to see when the stars are reached.

Bound: the alternation converges in O(log^2 n) rounds for n nodes (proven in the paper; about log n observed).
`round_cap(n)` = ceil(log2(n + 2))^2 + 10 rounds; a graph that has not converged by then raises
ComponentsDidNotConverge instead of looping (a bug, not a user's mistake)."""

import math

import numpy as np
import pandas as pd

EDGES = pd.DataFrame({"u": pd.Series(dtype=np.int64), "v": pd.Series(dtype=np.int64)})
LABELS = pd.DataFrame({"key": pd.Series(dtype=np.int64), "label": pd.Series(dtype=np.int64)})
EDGE_BYTES = 16  # a row (u, v); the rounds hold each verified edge in both directions


class ComponentsDidNotConverge(RuntimeError):
    pass


def round_cap(n_nodes: int) -> int:
    return math.ceil(math.log2(n_nodes + 2)) ** 2 + 10


def _edges(u, v) -> pd.DataFrame:
    return pd.DataFrame({"u": np.asarray(u, dtype=np.int64), "v": np.asarray(v, dtype=np.int64)})


def large_star(part: pd.DataFrame) -> pd.DataFrame:
    """Rows (u, v) hold both directions of each edge and every row of a node u: each larger neighbour of u is
    linked to the smallest of u and its neighbours."""
    if part.empty:
        return EDGES.copy()
    smallest = np.minimum(part["u"].to_numpy(), part.groupby("u")["v"].transform("min").to_numpy())
    larger = part["v"].to_numpy() > part["u"].to_numpy()
    return _edges(part["v"].to_numpy()[larger], smallest[larger]).drop_duplicates()


def small_star(part: pd.DataFrame) -> pd.DataFrame:
    """Rows (u, v) with v < u, every row of a node u: u and its smaller neighbours are linked to the smallest."""
    if part.empty:
        return EDGES.copy()
    smallest = part.groupby("u")["v"].transform("min").to_numpy()
    nodes = np.concatenate([part["v"].to_numpy(), part["u"].to_numpy()])
    out = _edges(nodes, np.concatenate([smallest, smallest]))
    return out[out["u"] != out["v"]].drop_duplicates()


def larger_first(part: pd.DataFrame) -> pd.DataFrame:
    u, v = part["u"].to_numpy(), part["v"].to_numpy()
    return _edges(np.maximum(u, v), np.minimum(u, v))


def both_directions(part: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([part[["u", "v"]], part[["v", "u"]].set_axis(["u", "v"], axis=1)], ignore_index=True)


def one_round(edges, partitions: int):
    """A large-star step then a small-star step; returns the distinct edges, larger node first."""
    big = (edges.map_partitions(both_directions, meta=EDGES).shuffle(on="u", npartitions=partitions)
           .map_partitions(large_star, meta=EDGES))
    small = (big.map_partitions(larger_first, meta=EDGES).shuffle(on="u", npartitions=partitions)
             .map_partitions(small_star, meta=EDGES))
    return small.shuffle(on=["u", "v"], npartitions=partitions).map_partitions(pd.DataFrame.drop_duplicates, meta=EDGES)


def star_counts(edges) -> tuple:
    """Lazy (edges, distinct children, children that are also parents). Edges are (child, parent) with
    parent < child; the graph is a forest of stars centred on each component's minimum exactly when every
    child has one parent and no parent is a child."""
    parents = edges[["v"]].rename(columns={"v": "u"}).drop_duplicates(split_out=edges.npartitions)
    return edges.shape[0], edges["u"].nunique(), parents.merge(edges[["u"]], on="u").shape[0]


def persisted(client, frame):
    """`client.persist(frame)`, returned once its partitions are computed. On a LocalCluster the scheduler runs in
    this process and turns a persisted expression into tasks in a thread of its own; building the next expression
    meanwhile deadlocked, now and then, on Python 3.11's functools.cached_property, whose lock is shared by every
    instance of a class (dask's expressions: the main thread in TaskShuffle._meta, the scheduler's thread in
    MapPartitions._meta, each waiting for the other; Python 3.12 dropped that lock). Each step needs the last one's
    result anyway, so waiting costs nothing."""
    from distributed import wait

    result = client.persist(frame)
    wait(result)
    return result


def component_labels(client, a_b, partitions: int, n_nodes_hint: int, cap: int | None = None):
    """Every node of the edges (columns a, b) with its component's smallest key, as a persisted Dask frame
    (key, label); and the number of rounds it took."""

    cap = cap if cap is not None else round_cap(n_nodes_hint)
    pairs = a_b.rename(columns={"a": "u", "b": "v"})[["u", "v"]]
    edges = persisted(client, pairs.map_partitions(larger_first, meta=EDGES))
    for rounds in range(1, cap + 1):
        edges = persisted(client, one_round(edges, partitions))
        n_edges, n_children, children_as_parents = client.compute(list(star_counts(edges)), sync=True)
        if n_edges == n_children and children_as_parents == 0:
            break
    else:
        raise ComponentsDidNotConverge(f"connected components did not reach stars in {cap} rounds "
                                       f"(bound for {n_nodes_hint} nodes); this is a bug, please report it")
    children = edges.rename(columns={"u": "key", "v": "label"})
    roots = edges[["v"]].drop_duplicates(split_out=partitions).rename(columns={"v": "key"})
    roots = roots.assign(label=roots["key"])
    return persisted(client, dd_concat([children, roots])), rounds


def dd_concat(frames):
    import dask.dataframe as dd

    return dd.concat(frames)
