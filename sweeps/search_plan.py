"""A mixture search made concrete: the space (the searched phases' components, their prior, their epoch caps
for the target run), the proxies' designs, the proxy model (a rung of a ladder spec) and the confirm runs.

Every proxy trains the same model on the same budget with the same seed; only the searched phases' weights
differ. Its mixture stands in for the target run (simulated epoching: each component's pool is cut to proxy
tokens / target tokens), so a design within the caps reads every component as often as the target run would."""

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from base.errors import UserError
from base.workspace import Workspace
from mixtures import MixtureSpec
from mixtures.compile import measure
from mixtures.manifest import documents, read_curation
from mixtures.spec import Phase
from sweeps.objective import describe, parse_objective, resolve_objective
from sweeps.plan import LadderPlan, RungPlan, TargetPlan, plan_ladder
from mixtures.cells import domain_names
from sweeps.search_baselines import NO_MIXING, STRATIFIED, single_sources, stratified
from sweeps.search_cells import check_cells, check_over, source_axes, with_wildcards
from sweeps.search_space import (DESIGNS, SearchSpace, natural_weights, proportional, sample_designs, uniform,
                                 unimax)
from sweeps.spec import LadderSpec
from sweeps.surrogate import SURROGATES, minimum_points

# designs keep this far under each cap: a proxy's pools and phase switch are whole sequences and steps, so its
# epochs can come out a little above the target run's
CAP_MARGIN = 0.95
PRIORS = ("natural", "spec")
BASELINES = ("proportional", "uniform", "unimax", STRATIFIED)  # and NO_MIXING, once the surrogate picks its source


@dataclass(frozen=True)
class SearchOptions:
    proxies: int = 12
    design: str = "spacefill"
    concentration: float = 1.0
    prior: str = "natural"
    phases: tuple[str, ...] = ()  # () = the first phase; ("all",) = every phase
    objective: str = "sources"
    surrogate: str = "loglinear"
    kl_weight: float = 0.05
    seed: int = 0
    rung: str | None = None  # the ladder spec's rung the proxies train; default: the smallest
    confirm: bool = False
    confirm_rung: str | None = None  # default: the rung above the proxies' (theirs if it is the largest)
    target_tokens: int | None = None  # default: the mixture's own budget
    over: tuple[str, ...] = ()  # cell axes (sweeps.search_cells): the searched phases' sources become their cells


@dataclass(frozen=True)
class SearchPlan:
    name: str
    base: MixtureSpec  # the mixture searched from, its budget the target run's
    target_tokens: int
    space: SearchSpace
    available_tokens: dict[str, int]  # per component: its training tokens, what its epochs are counted against
    designs: np.ndarray  # [proxies, space.dims]
    proxies: LadderPlan  # its rungs are the proxies (p01, ...), each NAME-p01 in mixtures/ and runs/
    confirm: LadderPlan | None  # its rungs are the confirm runs (searched, proportional, ...) once there is a choice
    baselines: dict[str, np.ndarray]  # the baselines known before any proxy trains (BASELINES)
    proxy_rung: str  # the ladder spec's rung the proxies train
    confirm_rung: str  # and the one the confirm runs train
    objective: dict[str, float]  # metric (source:NAME, eval:NAME, val_loss) -> its weight in the objective
    objective_text: str
    domain_names: dict[str, str] | None = None  # the curated domains' names by number, with --over domain
    single_sources: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # NO_MIXING's candidates
    # the confirm runs' mixtures again at the proxies' rung (PROXY_SCALE-KIND), for decision accuracy; None where
    # the confirm rung is the proxies' own
    at_proxy_scale: LadderPlan | None = None

    def with_weights(self, x: np.ndarray, name: str) -> MixtureSpec:
        """The base mixture with the searched phases' weights set to x."""
        weights = self.space.as_weights(x)
        phases = tuple(Phase(p.name, p.fraction, tuple(weights[p.name].items())) if p.name in weights else p
                       for p in self.base.phases)
        return dataclasses.replace(self.base, name=name, phases=phases)

    def feasible_sources(self) -> dict[str, np.ndarray]:
        """NO_MIXING's candidates within the caps."""
        return {source: x for source, x in self.single_sources.items() if self.within_caps(x)}

    def proxy_mixture(self, index: int) -> MixtureSpec:
        rung = self.proxies.rungs[index]
        return self.proxies.rung_mixture(self.with_weights(self.designs[index], rung.name), rung)

    def within_caps(self, x: np.ndarray) -> bool:
        """Whether the target run would read no component more than max_epochs times (the designs keep a margin
        under it; a baseline is held to the cap itself)."""
        return all(e <= self.base.max_epochs for e in self.epochs(x).values())

    def epochs(self, x: np.ndarray) -> dict[str, float]:
        """How often the target run reads each component with the searched weights x."""
        return {key: round(share * self.target_tokens / self.available_tokens[key], 4)
                for key, share in self.space.usage(x).items()}


def plan_search(ws: Workspace, name: str, base: MixtureSpec, ladder: LadderSpec, options: SearchOptions,
                vocab_size: int) -> SearchPlan:
    check_options(options)
    planned = plan_ladder(ladder, name, base, vocab_size)
    rungs = planned.rungs
    proxy_rung = _rung(rungs, options.rung, rungs[0], "--rung")
    target_tokens = options.target_tokens or base.target_tokens or base.resolved_tokens()
    if proxy_rung.tokens >= target_tokens:
        raise UserError(f"the proxies' rung {proxy_rung.rung} trains {proxy_rung.tokens:,} tokens, not fewer than "
                        f"the target run's {target_tokens:,}; pick a smaller --rung or raise --target-tokens")
    names = None
    if options.over:
        base, names = over_cells(ws, base, options)
    at_target = dataclasses.replace(base, seq_len=planned.seq_len, global_batch=planned.global_batch,
                                    target_tokens=None)
    measured = measure(at_target, ws, whole_batches=not options.over)  # a design weighs every cell itself
    if options.over:  # the searched phases' wildcards are now their cells, one weight each
        at_target = measured.spec
        base = dataclasses.replace(base, phases=measured.spec.phases)
        check_cells(base, [p.name for p in _searched_phases(base, options.phases)], options.over)
    stats = measured.stats
    terms = parse_objective(options.objective)
    validated = sorted(s for s, v in measured.validation.items() if v["sequences"] > 0)
    objective = resolve_objective(terms, validated, [e.name for e in base.evals])
    confirm_rung = _rung(rungs, options.confirm_rung, _next(rungs, proxy_rung), "--confirm-rung")
    space = build_space(at_target, options, stats, target_tokens, (proxy_rung, confirm_rung))
    check_enough_proxies(options, space.dims)
    designs = sample_designs(space, options.proxies, options.design, options.concentration, options.seed)
    target = TargetPlan(proxy_rung.flops_per_token * target_tokens, target_tokens, proxy_rung.active_parameters, None)
    proxies = _runs(planned, proxy_rung, [f"p{i + 1:02d}" for i in range(len(designs))], target)
    baselines = {"proportional": proportional(space), "uniform": uniform(space), "unimax": unimax(space),
                 STRATIFIED: stratified(space)}
    search = SearchPlan(name, dataclasses.replace(base, target_tokens=None), target_tokens, space,
                        {k: v["tokens"] for k, v in stats.items()}, designs, proxies, None, baselines,
                        proxy_rung.rung, confirm_rung.rung, objective, describe(terms), names, single_sources(space))
    if not options.confirm:
        return search
    labels = ["searched", *(kind for kind in BASELINES if kind not in not_confirmed(search))]
    labels += [NO_MIXING] if search.feasible_sources() else []
    small = None if proxy_rung == confirm_rung else _runs(planned, proxy_rung, [at_proxy_scale(search, label)
                                                                                 for label in labels], target)
    return dataclasses.replace(search, confirm=_runs(planned, confirm_rung, labels, target), at_proxy_scale=small)


def proxy_of(plan: SearchPlan, x: np.ndarray) -> str | None:
    """The proxy run whose design is x, if one is: the same rung, budget and seed, so it is x's run at the proxies'
    rung and none is trained again."""
    same = [r.name for r, design in zip(plan.proxies.rungs, plan.designs) if np.array_equal(design, x)]
    return same[0] if same else None


def at_proxy_scale(plan: SearchPlan, label: str) -> str:
    """The label of a confirm mixture's run at the proxies' rung: r0-searched."""
    return f"{plan.proxy_rung}-{label}"


def not_confirmed(plan: SearchPlan) -> dict[str, str]:
    """The baselines known before the fit that no confirm run trains, and why: over a cap, or the very mixture of a
    baseline before it (stratified over sources is uniform)."""
    skipped, seen = {}, {}
    for kind in BASELINES:
        x = plan.baselines[kind]
        same = next((other for other, y in seen.items() if np.array_equal(x, y)), None)
        if not plan.within_caps(x):
            skipped[kind] = over_cap(plan, x)
        elif same is not None:
            skipped[kind] = f"the same mixture as {same}"
        else:
            seen[kind] = x
    return skipped


def over_cap(plan: SearchPlan, x: np.ndarray) -> str:
    """Why a mixture over a cap is: its component read most often against max_epochs."""
    epochs = plan.epochs(x)
    over = max(epochs, key=lambda k: epochs[k])
    return (f"'{over}' would be read {epochs[over]:.2f} times by the target run, over max_epochs = "
            f"{plan.base.max_epochs:g}")


def check_options(options: SearchOptions) -> None:
    if options.surrogate not in SURROGATES:
        raise UserError(f"--surrogate {options.surrogate}: use one of {', '.join(SURROGATES)}")
    if options.design not in DESIGNS:
        raise UserError(f"--design {options.design}: use one of {', '.join(DESIGNS)}")
    if options.prior not in PRIORS:
        raise UserError(f"--prior {options.prior}: use natural (token-proportional) or spec (the mixture's weights)")
    if not 0 <= options.kl_weight < math.inf or not 0 < options.concentration < math.inf:
        raise UserError(f"--kl {options.kl_weight:g} --concentration {options.concentration:g}: --kl is a finite "
                        "number >= 0, --concentration a finite number > 0")


def over_cells(ws: Workspace, base: MixtureSpec, options: SearchOptions) -> tuple[MixtureSpec, dict | None]:
    """The base mixture with its searched phases' sources as wildcards over options.over (measure expands them),
    and the domains' names."""
    gen = ws.published()
    curation = read_curation(gen)
    check_over(options.over, curation)
    searched = [p.name for p in _searched_phases(base, options.phases)]
    axes = source_axes(documents(gen), options.over)
    return with_wildcards(base, searched, options.over, axes), domain_names(curation)


def check_enough_proxies(options: SearchOptions, dims: int) -> None:
    """A fit needs its points, and the held-out check one more: refused before anything trains."""
    needed = minimum_points(options.surrogate, dims) + 1
    if options.proxies < needed:
        raise UserError(f"--proxies {options.proxies}: a {options.surrogate} surrogate of {dims} weights needs at "
                        f"least {needed} proxies (one more than its fit, to check it on proxies it did not see); "
                        "raise --proxies or search fewer phases" + (" or axes" if options.over else ""))


def build_space(spec: MixtureSpec, options: SearchOptions, stats: dict[str, dict], target_tokens: int,
                rungs=()) -> SearchSpace:
    """The searched phases' space; each key's capacity the tightest of the target run's and of each rung's
    (`rungs`: their `steps`) own pool, which is whole sequences: a pool of a few sequences, a small cell's in a
    small proxy, rounds down by more than CAP_MARGIN leaves."""
    searched = _searched_phases(spec, options.phases)
    keys = tuple(tuple(k for k, _ in p.weights) for p in searched)
    tokens = {key: s["tokens"] for key, s in stats.items()}
    natural = natural_weights(keys, tokens)
    prior = natural if options.prior == "natural" else tuple(_normalized(p) for p in searched)
    capacity = {key: CAP_MARGIN * min(_capacities(spec, s, target_tokens, rungs)) for key, s in stats.items()}
    fixed = {key: 0.0 for key in stats}
    for phase in spec.phases:
        if phase not in searched:
            for key, weight in zip((k for k, _ in phase.weights), _normalized(phase)):
                fixed[key] += phase.fraction * weight
    return SearchSpace(tuple(p.name for p in searched), tuple(p.fraction for p in searched), keys, prior, natural,
                       capacity, fixed, spec.global_batch)


def _capacities(spec: MixtureSpec, stat: dict, target_tokens: int, rungs):
    """The fraction of a run's sequences a key may take within max_epochs: in the target run, and in each rung's
    run with its pool cut as the compiler cuts it (MixtureSpec.pool_sequences)."""
    yield spec.max_epochs * stat["tokens"] / target_tokens
    for rung in rungs:
        run = dataclasses.replace(spec, steps=rung.steps, total_tokens=None, target_tokens=target_tokens)
        yield spec.max_epochs * run.pool_sequences(stat["available_sequences"]) / (rung.steps * spec.global_batch)


def _searched_phases(spec: MixtureSpec, wanted: tuple[str, ...]) -> list[Phase]:
    if not wanted:
        return [spec.phases[0]]
    if wanted == ("all",):
        return list(spec.phases)
    names = [p.name for p in spec.phases]
    for phase in wanted:
        if phase not in names:
            raise UserError(f"--phase {phase}: mixture '{spec.name}' has the phases {', '.join(names)} (or give all)")
    return [p for p in spec.phases if p.name in wanted]


def _normalized(phase: Phase) -> tuple[float, ...]:
    total = sum(w for _, w in phase.weights)
    return tuple(w / total for _, w in phase.weights)


def _rung(rungs: tuple[RungPlan, ...], wanted: str | None, default: RungPlan, option: str) -> RungPlan:
    if wanted is None:
        return default
    for rung in rungs:
        if rung.rung == wanted:
            return rung
    raise UserError(f"{option} {wanted}: the ladder spec's rungs are {', '.join(r.rung for r in rungs)}")


def _next(rungs: tuple[RungPlan, ...], rung: RungPlan) -> RungPlan:
    index = rungs.index(rung)
    return rungs[min(index + 1, len(rungs) - 1)]


def _runs(ladder: LadderPlan, rung: RungPlan, labels: list[str], target: TargetPlan) -> LadderPlan:
    """Runs of one rung's model and budget, labelled: their mixtures and runs are SEARCH-LABEL (no cooldowns: a
    search compares final losses at one budget)."""
    runs = tuple(dataclasses.replace(rung, rung=label, name=f"{ladder.name}-{label}", cooldown_steps=())
                 for label in labels)
    return dataclasses.replace(ladder, rungs=runs, target=target, cooldowns=())
