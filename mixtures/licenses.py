"""A mixture's licences: each source's licence, origin and citation as the published generation records them
(manifest/provenance.parquet; "unknown" in a generation published before it), the spec's `allow_licenses`
checked against the sources it reads before anything is counted, and the tokens the plan trains per phase and
licence (a build's licenses.parquet)."""

import pyarrow as pa

from base.errors import UserError
from base.parquet_files import read_parquet
from base.workspace import PROVENANCE_TABLE, Generation
from curation.licenses import UNKNOWN, allows
from mixtures.compiled import read_licenses

LICENSES = pa.schema([("phase", pa.string()), ("license", pa.string()), ("tokens", pa.int64()),
                      ("sources", pa.string())])  # sources: those of the licence the phase reads, comma-separated


def provenance(gen: Generation) -> dict[str, dict]:
    """Each source's row of the generation's provenance table (source, license, origin, citation), by name; none
    for a generation published before the table."""
    path = gen.manifest_table(PROVENANCE_TABLE)
    if not path.exists():
        return {}
    return {row["source"]: row for row in read_parquet(path).to_pylist()}


def source_license(recorded: dict[str, dict], source: str) -> str:
    return recorded.get(source, {}).get("license") or UNKNOWN


def check_allowed(spec, sources: list[str], recorded: dict[str, dict]) -> None:
    """Refuses, in one line, a spec whose `allow_licenses` does not admit the licence of every source it reads."""
    if spec.allow_licenses is None:
        return
    refused = [(s, source_license(recorded, s)) for s in sources
               if not allows(spec.allow_licenses, source_license(recorded, s))]
    if refused:
        named = ", ".join(f"'{source}' ({license})" for source, license in refused)
        allowed = ", ".join(spec.allow_licenses) or "none"
        plural = len(refused) > 1
        raise UserError(f"mixture '{spec.name}': allow_licenses ({allowed}) does not allow source{'s' * plural} "
                        f"{named}; drop {'them' if plural else 'it'} from the weights, add the licence to "
                        "allow_licenses, or set the source's `license` in sources.toml and re-run `loom curate`")


def license_rows(plan: list[dict], source_tokens: dict[str, dict[str, int]], recorded: dict[str, dict]) -> list[dict]:
    """A row per phase and licence (schema LICENSES): the tokens the plan trains, each plan row's tokens split over
    its component's licences by their share of its training tokens (`source_tokens`: per component, tokens per
    source), in whole tokens that add up to the row's; the phase's sources of that licence."""
    totals: dict[tuple[str, str], list] = {}
    for row in plan:
        by_license: dict[str, int] = {}
        for source, tokens in source_tokens[row["component"]].items():
            license = source_license(recorded, source)
            by_license[license] = by_license.get(license, 0) + tokens
            totals.setdefault((row["phase"], license), [0, set()])[1].add(source)
        for license, tokens in split(row["tokens"], by_license).items():
            totals[(row["phase"], license)][0] += tokens
    return [{"phase": phase, "license": license, "tokens": tokens, "sources": ",".join(sorted(sources))}
            for (phase, license), (tokens, sources) in totals.items()]


def split(total: int, weights: dict[str, int]) -> dict[str, int]:
    """`total` in whole parts proportional to `weights` (largest remainders get the units left)."""
    whole = sum(weights.values())
    if not whole:
        return {key: (total if i == 0 else 0) for i, key in enumerate(weights)}
    parts = {key: total * weight // whole for key, weight in weights.items()}
    left = total - sum(parts.values())
    for key in sorted(weights, key=lambda k: (-(total * weights[k] % whole), k))[:left]:
        parts[key] += 1
    return parts


def tokens_per_license(rows: list[dict]) -> dict[str, int]:
    """The tokens of licenses.parquet's rows summed per licence, the largest first."""
    tokens: dict[str, int] = {}
    for row in rows:
        tokens[row["license"]] = tokens.get(row["license"], 0) + row["tokens"]
    return dict(sorted(tokens.items(), key=lambda item: (-item[1], item[0])))


def licenses_line(rows: list[dict]) -> str:
    """`MIT 60.0%, unknown 40.0%`: the share of the mixture's tokens per licence, the largest first."""
    tokens = tokens_per_license(rows)
    whole = sum(tokens.values()) or 1
    return ", ".join(f"{license} {100 * n / whole:.1f}%" for license, n in tokens.items())


def exported_licenses(build_root, gen: Generation, sources: list[str], phases: list[str]) -> dict:
    """What an export's sidecar says of its licences: each source it reads with its licence, origin and citation,
    and the tokens the plan trains per licence in the exported phases (none for a build made before
    licenses.parquet)."""
    recorded = provenance(gen)
    tokens = tokens_per_license([row for row in read_licenses(build_root) if row["phase"] in phases])
    return {"sources": [{"source": s, "license": source_license(recorded, s),
                         "origin": recorded.get(s, {}).get("origin", ""),
                         "citation": recorded.get(s, {}).get("citation", "")} for s in sources],
            "tokens_per_license": tokens}
