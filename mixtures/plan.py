"""Planning a mixture, without touching a file: what each weight key selects, the phases' steps and sequences
per batch, and the plan's rows (tokens and epochs per phase and component)."""

from dataclasses import dataclass

import pyarrow as pa

from base.errors import UserError, did_you_mean, near_misses
from base.sql import literal, literal_list
from mixtures.cells import TAG_PREFIX, checked_slice, is_tag_key, slice_where, source_tags
from mixtures.schedule import largest_remainder
from mixtures.spec import MixtureSpec

PLAN = pa.schema([
    ("phase", pa.string()), ("component", pa.string()), ("sources", pa.string()), ("weight", pa.float64()),
    ("target_share", pa.float64()), ("realized_share", pa.float64()), ("sequences_per_step", pa.int32()),
    ("steps", pa.int64()), ("sequences", pa.int64()), ("tokens", pa.int64()), ("epochs_cumulative", pa.float64()),
    ("available_sequences", pa.int64()), ("available_tokens", pa.int64()), ("documents", pa.int64()),
    ("validation_tokens", pa.int64()),  # held out of the component's sources (mixtures.heldout), never trained on
    ("pool_sequences", pa.int64()),  # read epoch after epoch: all available unless target_tokens cuts them
    ("rehydration", pa.float64()),  # [rehydrate]: available tokens with each document's repeats over without; 1: none
])


@dataclass(frozen=True)
class Component:
    key: str
    where: str  # SQL over the manifest's documents
    sources: tuple[str, ...]


def weight_keys(spec: MixtureSpec) -> list[str]:
    """Every key any phase weighs, in the order they first appear: the mixture's components."""
    return list(dict.fromkeys(key for phase in spec.phases for key, _ in phase.weights))


def resolve(key: str, sources: dict[str, dict], names: dict[str, str] | None = None) -> Component:
    """A weight's key: a source, a tag of sources (`tag:NAME`, or NAME where no source is called that), or a slice
    `source:column op value[,column op value...]` (mixtures.cells; `names`: the domains' names, None where the data
    has no domains). A wildcard key's component selects every cell of it; compile expands it into the cells first."""
    if key in sources:
        return Component(key, f"source = {literal(key)}", (key,))
    tagged = tagged_sources(key, sources)
    if tagged:
        return Component(key, f"source IN {literal_list(tagged)}", tagged)
    source, conditions = checked_slice(key, sources, names)
    return Component(key, slice_where(source, conditions), (source,))


def tagged_sources(key: str, sources: dict[str, dict]) -> tuple[str, ...]:
    """The sources a tag key selects: `tag:NAME` always means the tag; a bare NAME means it where no source has that
    name, refused when a source's name is close to it (a typo of the source would silently weigh the tag); ()
    where the key is no tag."""
    explicit = is_tag_key(key)
    name = key.removeprefix(TAG_PREFIX) if explicit else key
    tagged = tuple(sorted(source for source, info in sources.items() if name in info["tags"]))
    if explicit and not tagged:
        tags = source_tags(sources)
        raise UserError(f"weight key '{key}': no source has tag '{name}'{did_you_mean(name, tags)}; tags: "
                        f"{', '.join(sorted(tags)) or 'none'}")
    if explicit or not tagged:
        return tagged
    close = near_misses(name, sources)
    if close:
        counted = f"{len(tagged)} source{'s' if len(tagged) > 1 else ''}"
        raise UserError(f"weight key '{key}' is a tag ({counted}) and close to source '{close[0]}'; "
                        f"write '{TAG_PREFIX}{key}' or '{close[0]}'")
    return tagged


def component_stats(spec: MixtureSpec, key: str, documents: int, tokens: int) -> dict:
    """What a component trains on (its sources' held-out documents left out: mixtures.heldout), in whole
    sequences of seq_len + 1 tokens, and the pool of them this mixture reads (MixtureSpec.pool_sequences)."""
    if documents == 0:
        raise UserError(f"mixture '{spec.name}': weight key '{key}' matches no documents left for training once "
                        "validation's are held out; check it against `loom mix show` or the manifest")
    available = tokens // (spec.seq_len + 1)
    if available == 0:
        raise UserError(f"mixture '{spec.name}': '{key}' has {tokens} training tokens, less than one sequence of "
                        f"{spec.seq_len + 1}; lower seq_len or drop it")
    return {"documents": documents, "tokens": tokens, "available_sequences": available,
            "pool_sequences": spec.pool_sequences(available)}


def plan_phases(spec: MixtureSpec, keys: list[str], steps: int) -> list[dict]:
    """Each phase's steps (the switch at round(cumulative fraction x steps); every step is a block, so the
    switch needs no snapping) and its sequences per batch for each key (largest remainder of its share)."""
    phases, start, cumulative = [], 0, 0.0
    for i, phase in enumerate(spec.phases):
        cumulative += phase.fraction
        end = steps if i == len(spec.phases) - 1 else round(cumulative * steps)
        if end <= start:
            raise UserError(f"mixture '{spec.name}': phase '{phase.name}' gets no steps of {steps}; raise the budget")
        weights = dict(phase.weights)
        shares = [weights.get(k, 0.0) for k in keys]
        counts = largest_remainder(shares, spec.global_batch)
        for key, share, count in zip(keys, shares, counts):
            if share > 0 and count == 0:
                raise UserError(f"mixture '{spec.name}': in phase '{phase.name}', '{key}' rounds to 0 of "
                                f"{spec.global_batch} sequences per batch; raise global_batch or its weight")
        phases.append({"name": phase.name, "start_step": start, "end_step": end, "counts": counts, "shares": shares})
        start = end
    return phases


def plan_rows(spec: MixtureSpec, components: list[Component], phases: list[dict], stats: dict[str, dict]) -> list[dict]:
    """One row per phase and component it uses (schema PLAN); refuses a component whose pool would be read more
    than max_epochs times (under simulated epoching, exactly as often as the target run would read all of it)."""
    rows, used = [], {c.key: 0 for c in components}
    for phase in phases:
        n_steps = phase["end_step"] - phase["start_step"]
        total_share = sum(phase["shares"])
        for c, share, count in zip(components, phase["shares"], phase["counts"]):
            if share == 0:
                continue
            used[c.key] += count * n_steps
            epochs = used[c.key] / stats[c.key]["pool_sequences"]
            if epochs > spec.max_epochs:
                raise UserError(f"mixture '{spec.name}': '{c.key}' would be read {epochs:.2f} times by the end of "
                                f"'{phase['name']}'{_simulated(spec)}, over max_epochs = {spec.max_epochs:g}; lower "
                                "its weight or the budget, or raise max_epochs")
            rows.append({
                "phase": phase["name"], "component": c.key, "sources": ",".join(c.sources), "weight": share,
                "target_share": share / total_share, "realized_share": count / spec.global_batch,
                "sequences_per_step": count, "steps": n_steps, "sequences": count * n_steps,
                "tokens": count * n_steps * spec.seq_len, "epochs_cumulative": round(epochs, 6),
                "available_sequences": stats[c.key]["available_sequences"], "available_tokens": stats[c.key]["tokens"],
                "documents": stats[c.key]["documents"], "validation_tokens": stats[c.key]["validation_tokens"],
                "pool_sequences": stats[c.key]["pool_sequences"], "rehydration": stats[c.key].get("rehydration", 1.0),
            })
    return rows


def _simulated(spec: MixtureSpec) -> str:
    """How the epoch count is meant when the pools are cut: as in the run the mixture stands in for."""
    if not spec.simulates_epochs():
        return ""
    return f" (as in the target run of {spec.target_tokens:,} tokens it simulates)"
